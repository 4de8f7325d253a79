/* version.h - the tpuc release, printed by every tool's --version, written
 * into each .tmodel (formats/tpuc-tmodel.5) and into tpuc.pc.  The Makefile
 * reads it from here. */
#ifndef TPUC_VERSION_H
#define TPUC_VERSION_H

#define TPUC_VERSION "0.9.0"

#endif
