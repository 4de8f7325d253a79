/* onnx_depth.h - how deep an ONNX model nests its messages, checked before
 * the protobuf decoder (which recurses once per level) sees it. */
#ifndef TPUC_FRONT_ONNX_DEPTH_H
#define TPUC_FRONT_ONNX_DEPTH_H

#include <stddef.h>
#include <stdint.h>

/* Deepest nesting of messages read (a subgraph in an attribute of a node
 * of a graph is three levels): the protobuf decoder recurses once per
 * level, so deeper models are refused before it runs (lib/front/onnx_depth.c). */
#define ONNX_MAX_DEPTH 96

/* 0 when the model in buf[0..len) nests its messages at most
 * ONNX_MAX_DEPTH deep, else -1 with "'PATH': ... nested more than ..." */
int onnx_check_depth(const void *buf, size_t len, const char *path);

/* The protobuf varint at *p (before end) into *v, *p moved past it; 0, or
 * -1 when malformed (shared with onnx_strip.c). */
int onnx_varint(const unsigned char **p, const unsigned char *end, uint64_t *v);

#endif
