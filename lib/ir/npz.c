/* npz.c - numpy .npz archives through libzip: .npy header parsing and
 * writing, member I/O, and conversion of any array to float32.
 */
#include "ir/npz.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zip.h>

#include "ir/base.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
	       "npz.c reads and writes little-endian data in place");

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAGIC_LEN 6
#define NPY_MAX_HEADER (1 << 20)   /* bytes; numpy itself caps it at 10000 */

/* .npy type strings without their byte-order character, per dtype; bf16 has
 * none. */
static const char *const npy_kind[DT_COUNT] = {
	[DT_F32] = "f4", [DT_F16] = "f2", [DT_I8] = "i1", [DT_U8] = "u1",
	[DT_I16] = "i2", [DT_I32] = "i4", [DT_I64] = "i8", [DT_BOOL] = "b1",
	[DT_F64] = "f8", [DT_U16] = "u2", [DT_U32] = "u4", [DT_U64] = "u8",
};
_Static_assert(DT_COUNT == 13, "add the new dtype to npy_kind");

/* A descr such as "<f8", "|u1" or ">i4": how the stored elements are read
 * (KIND 'f', 'i', 'u' or 'b', SIZE bytes, SWAP for big-endian) and the
 * dtype they become (every numeric type numpy has is one of tpuc's).  -1
 * for a descr numpy would not call a plain number (complex, strings, dates,
 * objects). */
struct npy_type {
	char kind;
	int size, swap;
	enum ir_dtype dt;
};

static int npy_type_of(const char *d, struct npy_type *t)
{
	static const struct { const char *k; enum ir_dtype dt; } map[] = {
		{ "f2", DT_F16 }, { "f4", DT_F32 }, { "f8", DT_F64 },
		{ "i1", DT_I8 }, { "i2", DT_I16 }, { "i4", DT_I32 }, { "i8", DT_I64 },
		{ "u1", DT_U8 }, { "u2", DT_U16 }, { "u4", DT_U32 }, { "u8", DT_U64 },
		{ "b1", DT_BOOL },
	};
	if (!d[0] || !strchr("<|=>", d[0]))
		return -1;
	const char *k = d + 1;
	if (!strcmp(k, "?"))
		k = "b1";
	for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
		if (strcmp(k, map[i].k))
			continue;
		t->kind = k[0];
		t->size = k[1] - '0';
		t->swap = d[0] == '>' && t->size > 1;
		t->dt = map[i].dt;
		return 0;
	}
	return -1;
}

/* Whether elements of T are stored exactly as T->dt holds them. */
static int npy_type_direct(const struct npy_type *t)
{
	return !t->swap && (size_t)t->size == dtype_size(t->dt);
}

static void swap_bytes(unsigned char *p, int size)
{
	for (int i = 0; i < size / 2; i++) {
		unsigned char c = p[i];
		p[i] = p[size - 1 - i];
		p[size - 1 - i] = c;
	}
}

/* Copy N elements of type T at SRC (swapped in place when big-endian)
 * into DST, of T->dt (the same size). */
static void npy_convert(void *dst, unsigned char *src, const struct npy_type *t, int64_t n)
{
	for (int64_t i = 0; i < n; i++) {
		unsigned char *e = src + i * t->size;
		if (t->swap)
			swap_bytes(e, t->size);
		memcpy((unsigned char *)dst + i * t->size, e, (size_t)t->size);
	}
}

/* Element count of SHAPE, or -1 on a negative dimension or overflow. */
static int64_t shape_numel(int rank, const int64_t *shape, size_t esize)
{
	int64_t n = 1;
	for (int i = 0; i < rank; i++) {
		if (shape[i] < 0)
			return -1;
		if (shape[i] && n > INT64_MAX / (int64_t)esize / shape[i])
			return -1;
		n *= shape[i];
	}
	return n;
}

int64_t npz_numel(const struct npz_array *a)
{
	int64_t n = 1;
	for (int i = 0; i < a->rank; i++)
		n *= a->shape[i];
	return n;
}

/* ---- the .npy header: a Python dict literal -------------------------- */

struct npy_header {
	char descr[32];
	int fortran;                   /* 1 if 'fortran_order': True */
	int rank;
	int64_t shape[IR_MAX_RANK];
};

struct cursor {
	const char *p, *end;
};

static void skip_ws(struct cursor *c)
{
	while (c->p < c->end && strchr(" \t\r\n", *c->p))
		c->p++;
}

static int accept(struct cursor *c, char ch)
{
	skip_ws(c);
	if (c->p < c->end && *c->p == ch) {
		c->p++;
		return 1;
	}
	return 0;
}

/* A quoted Python string into BUF (no escapes: numpy never writes any). */
static int parse_str(struct cursor *c, char *buf, size_t cap)
{
	skip_ws(c);
	if (c->p >= c->end || (*c->p != '\'' && *c->p != '"'))
		return -1;
	char q = *c->p++;
	size_t n = 0;
	while (c->p < c->end && *c->p != q) {
		if (n + 1 >= cap)
			return -1;
		buf[n++] = *c->p++;
	}
	if (c->p >= c->end)
		return -1;
	c->p++;
	buf[n] = 0;
	return 0;
}

static int parse_word(struct cursor *c, const char *w)
{
	size_t n = strlen(w);
	skip_ws(c);
	if ((size_t)(c->end - c->p) < n || memcmp(c->p, w, n))
		return 0;
	c->p += n;
	return 1;
}

/* A tuple of non-negative ints: "()", "(3,)", "(2, 3)"; "(3)" tolerated. */
static int parse_shape(struct cursor *c, struct npy_header *h)
{
	if (!accept(c, '('))
		return err_set("malformed .npy header: 'shape' is not a tuple");
	h->rank = 0;
	while (!accept(c, ')')) {
		skip_ws(c);
		if (c->p >= c->end || *c->p < '0' || *c->p > '9')
			return err_set("malformed .npy header: bad 'shape'");
		int64_t v = 0;
		while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
			if (v > (INT64_MAX - 9) / 10)
				return err_set("dimension too large in 'shape'");
			v = v * 10 + (*c->p++ - '0');
		}
		if (c->p < c->end && *c->p == 'L')     /* Python 2 long */
			c->p++;
		if (h->rank == IR_MAX_RANK)
			return err_set("rank exceeds %d", IR_MAX_RANK);
		h->shape[h->rank++] = v;
		if (!accept(c, ',')) {
			if (!accept(c, ')'))
				return err_set("malformed .npy header: bad 'shape'");
			break;
		}
	}
	return 0;
}

static int parse_header(const char *text, size_t len, struct npy_header *h)
{
	struct cursor c = { text, text + len };
	int seen = 0;   /* bits: 1 descr, 2 fortran_order, 4 shape */
	char key[32];

	memset(h, 0, sizeof *h);
	if (!accept(&c, '{'))
		return err_set("malformed .npy header: not a dict");
	while (!accept(&c, '}')) {
		if (parse_str(&c, key, sizeof key) < 0 || !accept(&c, ':'))
			return err_set("malformed .npy header");
		if (!strcmp(key, "descr")) {
			skip_ws(&c);
			if (c.p < c.end && *c.p == '[')
				return err_set("unsupported dtype (structured array)"), 1;
			if (parse_str(&c, h->descr, sizeof h->descr) < 0)
				return err_set("malformed .npy header: bad 'descr'");
			seen |= 1;
		} else if (!strcmp(key, "fortran_order")) {
			if (parse_word(&c, "True"))
				h->fortran = 1;
			else if (!parse_word(&c, "False"))
				return err_set("malformed .npy header: bad 'fortran_order'");
			seen |= 2;
		} else if (!strcmp(key, "shape")) {
			if (parse_shape(&c, h) < 0)
				return -1;
			seen |= 4;
		} else {
			return err_set("malformed .npy header: unknown key '%s'", key);
		}
		if (!accept(&c, ',')) {
			if (!accept(&c, '}'))
				return err_set("malformed .npy header");
			break;
		}
	}
	skip_ws(&c);
	if (c.p != c.end)
		return err_set("malformed .npy header: text after the dict");
	if (seen != 7)
		return err_set("malformed .npy header: missing '%s'",
			       !(seen & 1) ? "descr" : !(seen & 2) ? "fortran_order" : "shape");
	return 0;
}

/* ---- reading ---------------------------------------------------------- */

/* libzip's message with its first letter lowered, as our messages go. */
static const char *zip_msg(zip_error_t *ze)
{
	static char buf[256];
	snprintf(buf, sizeof buf, "%s", zip_error_strerror(ze));
	if (buf[0] >= 'A' && buf[0] <= 'Z' && !(buf[1] >= 'A' && buf[1] <= 'Z'))
		buf[0] = (char)(buf[0] - 'A' + 'a');
	return buf;
}

/* Read exactly N bytes from F, or fail with "truncated" / libzip's reason. */
static int read_full(zip_file_t *f, void *buf, size_t n)
{
	size_t got = 0;
	while (got < n) {
		zip_int64_t r = zip_fread(f, (char *)buf + got, n - got);
		if (r < 0)
			return err_set("%s", zip_msg(zip_file_get_error(f)));
		if (r == 0)
			return err_set("truncated .npy data");
		got += (size_t)r;
	}
	return 0;
}

/* Reorder A's elements from column-major (fortran_order) to row-major. */
static void fortran_to_c(struct npz_array *a)
{
	size_t es = dtype_size(a->dtype);
	int64_t n = npz_numel(a), idx[IR_MAX_RANK] = { 0 };
	unsigned char *c = xaligned(a->nbytes ? a->nbytes : 1);
	for (int64_t i = 0; i < n; i++) {
		/* idx is element i's index in C order; its Fortran offset: */
		int64_t off = 0;
		for (int d = a->rank - 1; d >= 0; d--)
			off = off * a->shape[d] + idx[d];
		memcpy(c + (size_t)i * es, (unsigned char *)a->data + (size_t)off * es, es);
		for (int d = a->rank - 1; d >= 0 && ++idx[d] == a->shape[d]; d--)
			idx[d] = 0;
	}
	free(a->data);
	a->data = c;
}

/* Read the member F of SIZE bytes (uncompressed) as array NAME into Z. */
static int read_npy(zip_file_t *f, uint64_t size, const char *name, struct npz *z)
{
	unsigned char pre[12];
	if (size < 10)
		return err_set("not an .npy array");
	if (read_full(f, pre, 10) < 0)
		return -1;
	if (memcmp(pre, NPY_MAGIC, NPY_MAGIC_LEN))
		return err_set("not an .npy array");
	int major = pre[6], minor = pre[7];
	uint64_t hlen, off;
	if (major == 1 && minor == 0) {
		hlen = pre[8] | (uint64_t)pre[9] << 8;
		off = 10;
	} else if ((major == 2 || major == 3) && minor == 0) {
		if (size < 12 || read_full(f, pre + 10, 2) < 0)
			return err_set("truncated .npy header");
		hlen = pre[8] | (uint64_t)pre[9] << 8 | (uint64_t)pre[10] << 16 |
		       (uint64_t)pre[11] << 24;
		off = 12;
	} else {
		return err_set("unsupported .npy format version %d.%d", major, minor);
	}
	if (hlen > NPY_MAX_HEADER || off + hlen > size)
		return err_set("truncated or oversized .npy header");

	char *text = xmalloc(hlen + 1);
	struct npy_header h;
	int rc = read_full(f, text, hlen);
	if (rc == 0)
		rc = parse_header(text, hlen, &h);
	free(text);
	if (rc)
		return rc;    /* -1, or 1 for a structured array */

	/* Arrays tpuc cannot use are skipped, not refused: a file may hold
	 * more than a tool reads.  A tool that wants one says why it is not
	 * there (npz_missing). */
	struct npy_type t;
	if (npy_type_of(h.descr, &t) < 0)
		return err_set("unsupported dtype '%s'", h.descr), 1;
	int64_t numel = shape_numel(h.rank, h.shape, (size_t)t.size);
	if (numel < 0)
		return err_set("array too large");
	uint64_t nbytes = (uint64_t)numel * (uint64_t)t.size;
	if (size - off - hlen != nbytes)
		return err_set("%llu bytes of data, header says %llu",
			       (unsigned long long)(size - off - hlen),
			       (unsigned long long)nbytes);
	if (npz_find(z, name))
		return err_set("duplicate array name");

	struct npz_array *a = npz_add(z, name, t.dt, h.rank, h.shape, NULL);
	if (!a)
		return -1;
	if (npy_type_direct(&t)) {
		if (read_full(f, a->data, a->nbytes) < 0)
			goto fail;
	} else {
		unsigned char *raw = xmalloc(nbytes ? nbytes : 1);
		if (read_full(f, raw, nbytes) < 0) {
			free(raw);
			goto fail;
		}
		npy_convert(a->data, raw, &t, numel);
		free(raw);
	}
	if (h.fortran && h.rank >= 2)
		fortran_to_c(a);
	/* One more read reaches the end of the member, where libzip checks the
	 * CRC. */
	char extra;
	zip_int64_t r = zip_fread(f, &extra, 1);
	if (r < 0) {
		err_set("%s", zip_msg(zip_file_get_error(f)));
		goto fail;
	}
	if (r > 0) {
		err_set("more data than the header says");
		goto fail;
	}
	return 0;
fail:
	free(a->name);
	free(a->data);
	z->n--;
	return -1;
}

/* Note member NAME as skipped, with the current message as the reason. */
static void add_skipped(struct npz *z, const char *name)
{
	if (z->n_skipped == z->cap_skipped)
		grow_array((void **)&z->skipped, &z->cap_skipped, z->n_skipped + 1,
			   sizeof *z->skipped);
	z->skipped[z->n_skipped].name = xstrdup(name);
	z->skipped[z->n_skipped].why = xstrdup(err_msg());
	z->n_skipped++;
}

/* Open PATH ("-" is stdin) as a libzip archive; *HOLD keeps a stdin buffer
 * alive until the archive is discarded. */
static zip_t *open_archive(const char *path, void **hold)
{
	zip_error_t ze;
	zip_source_t *src;
	*hold = NULL;
	zip_error_init(&ze);
	if (!strcmp(path, "-")) {
		size_t len;
		if (file_read_all(path, hold, &len) < 0)
			return NULL;
		src = zip_source_buffer_create(*hold, len, 0, &ze);
	} else {
		FILE *fp = fopen(path, "rb");
		struct stat st;
		if (!fp)
			return err_set("cannot open '%s':", path), NULL;
		if (fstat(fileno(fp), &st) == 0 && S_ISDIR(st.st_mode)) {
			fclose(fp);
			errno = EISDIR;
			return err_set("cannot open '%s':", path), NULL;
		}
		src = zip_source_filep_create(fp, 0, -1, &ze);
		if (!src)
			fclose(fp);
	}
	zip_t *za = src ? zip_open_from_source(src, ZIP_RDONLY, &ze) : NULL;
	if (!za) {
		const char *shown = strcmp(path, "-") ? path : "<stdin>";
		int code = zip_error_code_zip(&ze);
		if (code == ZIP_ER_NOZIP || code == ZIP_ER_INCONS)
			err_set("'%s': not a valid zip archive (truncated or not an npz file)", shown);
		else
			err_set("cannot read '%s': %s", shown, zip_msg(&ze));
		if (src)
			zip_source_free(src);
		free(*hold);
		*hold = NULL;
	}
	zip_error_fini(&ze);
	return za;
}

int npz_read(const char *path, struct npz *z)
{
	void *hold;
	const char *shown = path && strcmp(path, "-") ? path : "<stdin>";

	memset(z, 0, sizeof *z);
	zip_t *za = open_archive(path ? path : "-", &hold);
	if (!za)
		return -1;
	zip_int64_t n = zip_get_num_entries(za, 0);
	for (zip_int64_t i = 0; i < n; i++) {
		zip_stat_t st;
		if (zip_stat_index(za, (zip_uint64_t)i, 0, &st) < 0) {
			err_set("'%s': %s", shown, zip_msg(zip_get_error(za)));
			goto fail;
		}
		size_t len = strlen(st.name);
		if (len && st.name[len - 1] == '/')
			continue;                     /* a directory entry */
		char *name = xstrdup(st.name);
		if (len >= 4 && !strcmp(name + len - 4, ".npy"))
			name[len - 4] = 0;
		zip_file_t *f = zip_fopen_index(za, (zip_uint64_t)i, 0);
		int rc;
		if (!f)
			rc = err_set("%s", zip_msg(zip_get_error(za)));
		else
			rc = read_npy(f, st.size, name, z);
		if (f)
			zip_fclose(f);
		free(name);
		if (rc > 0) {
			size_t nl = strlen(st.name);
			char *base = xstrdup(st.name);
			if (nl >= 4 && !strcmp(base + nl - 4, ".npy"))
				base[nl - 4] = 0;
			add_skipped(z, base);
			free(base);
			continue;
		}
		if (rc < 0) {
			err_prefix("'%s': member '%s'", shown, st.name);
			goto fail;
		}
	}
	zip_discard(za);
	free(hold);
	return 0;
fail:
	zip_discard(za);
	free(hold);
	npz_free(z);
	return -1;
}

/* ---- writing ---------------------------------------------------------- */

/* The .npy preamble and header for A, padded with spaces and a newline to a
 * multiple of 64 bytes as numpy does.  Returns a malloc'd buffer. */
static char *npy_header(const struct npz_array *a, size_t *len)
{
	char shape[IR_MAX_RANK * 24 + 4], dict[sizeof shape + 96];
	size_t n = 0;
	shape[n++] = '(';
	for (int i = 0; i < a->rank; i++)
		n += (size_t)snprintf(shape + n, sizeof shape - n, "%s%lld", i ? ", " : "",
				      (long long)a->shape[i]);
	snprintf(shape + n, sizeof shape - n, a->rank == 1 ? ",)" : ")");
	int dlen = snprintf(dict, sizeof dict,
			    "{'descr': '%c%s', 'fortran_order': False, 'shape': %s, }",
			    dtype_size(a->dtype) == 1 ? '|' : '<', npy_kind[a->dtype], shape);
	size_t total = ((size_t)NPY_MAGIC_LEN + 4 + (size_t)dlen + 1 + 63) / 64 * 64;
	size_t hlen = total - NPY_MAGIC_LEN - 4;
	char *h = xmalloc(total);
	memcpy(h, NPY_MAGIC "\x01\x00", NPY_MAGIC_LEN + 2);
	h[8] = (char)(hlen & 0xff);
	h[9] = (char)(hlen >> 8);
	memcpy(h + 10, dict, (size_t)dlen);
	memset(h + 10 + dlen, ' ', hlen - (size_t)dlen - 1);
	h[total - 1] = '\n';
	*len = total;
	return h;
}

/* Add A to ZA as "NAME.npy", its header kept in *HDR until zip_close. */
static int add_member(zip_t *za, const struct npz_array *a, int compress, char **hdr)
{
	zip_error_t ze;
	zip_buffer_fragment_t frag[2];
	size_t hlen;

	*hdr = npy_header(a, &hlen);
	frag[0].data = (zip_uint8_t *)*hdr;
	frag[0].length = hlen;
	frag[1].data = a->data;
	frag[1].length = a->nbytes;
	zip_error_init(&ze);
	zip_source_t *src = zip_source_buffer_fragment_create(frag, a->nbytes ? 2 : 1, 0, &ze);
	if (!src) {
		err_set("%s", zip_msg(&ze));
		zip_error_fini(&ze);
		return -1;
	}
	zip_error_fini(&ze);
	size_t nlen = strlen(a->name) + 5;
	char *mname = xmalloc(nlen);
	snprintf(mname, nlen, "%s.npy", a->name);
	zip_int64_t idx = zip_file_add(za, mname, src, ZIP_FL_ENC_UTF_8);
	free(mname);
	if (idx < 0) {
		zip_source_free(src);
		return err_set("%s", zip_msg(zip_get_error(za)));
	}
	/* DOS date 1980-01-01 ((0 << 9) | (1 << 5) | 1), time 00:00:00. */
	if (zip_set_file_compression(za, (zip_uint64_t)idx,
				     compress ? ZIP_CM_DEFLATE : ZIP_CM_STORE, 0) < 0 ||
	    zip_file_set_dostime(za, (zip_uint64_t)idx, 0, (1 << 5) | 1, 0) < 0)
		return err_set("%s", zip_msg(zip_get_error(za)));
	return 0;
}

/* The finished archive in SRC as one malloc'd buffer. */
static int source_bytes(zip_source_t *src, void **buf, size_t *len)
{
	zip_stat_t st;
	zip_stat_init(&st);
	if (zip_source_stat(src, &st) < 0 || zip_source_open(src) < 0)
		return err_set("%s", zip_msg(zip_source_error(src)));
	*buf = xmalloc(st.size);
	*len = st.size;
	zip_int64_t r = zip_source_read(src, *buf, st.size);
	zip_source_close(src);
	if (r < 0 || (zip_uint64_t)r != st.size) {
		free(*buf);
		return err_set("cannot read the archive back from memory");
	}
	return 0;
}

int npz_write(const char *path, const struct npz *z, int compress)
{
	/* libzip writes nothing for an empty archive; numpy writes this. */
	static const unsigned char empty_zip[22] = { 'P', 'K', 5, 6 };
	const char *shown = path && strcmp(path, "-") ? path : "<stdout>";

	for (int i = 0; i < z->n; i++)
		if (!npy_kind[z->a[i].dtype])
			return err_set("'%s': array '%s': %s has no .npy type", shown,
				       z->a[i].name, dtype_name(z->a[i].dtype));
	if (z->n == 0)
		return out_write_all(path, empty_zip, sizeof empty_zip);

	/* Build the archive in memory, then write it atomically. */
	zip_error_t ze;
	zip_error_init(&ze);
	zip_source_t *mem = zip_source_buffer_create(NULL, 0, 0, &ze);
	zip_t *za = mem ? zip_open_from_source(mem, ZIP_TRUNCATE, &ze) : NULL;
	if (!za) {
		err_set("'%s': %s", shown, zip_msg(&ze));
		zip_error_fini(&ze);
		if (mem)
			zip_source_free(mem);
		return -1;
	}
	zip_error_fini(&ze);
	zip_source_keep(mem);

	char **hdr = xcalloc((size_t)z->n, sizeof *hdr);
	int rc = 0;
	for (int i = 0; i < z->n && rc == 0; i++)
		if (add_member(za, &z->a[i], compress, &hdr[i]) < 0)
			rc = err_prefix("'%s': array '%s'", shown, z->a[i].name);
	if (rc == 0 && zip_close(za) < 0)
		rc = err_set("'%s': %s", shown, zip_msg(zip_get_error(za)));
	if (rc < 0)
		zip_discard(za);
	for (int i = 0; i < z->n; i++)
		free(hdr[i]);
	free(hdr);

	void *buf = NULL;
	size_t len = 0;
	if (rc == 0 && (rc = source_bytes(mem, &buf, &len)) < 0)
		err_prefix("'%s'", shown);
	zip_source_free(mem);
	if (rc == 0)
		rc = out_write_all(path, buf, len);
	free(buf);
	return rc;
}

/* ---- the array list --------------------------------------------------- */

void npz_free(struct npz *z)
{
	for (int i = 0; i < z->n; i++) {
		free(z->a[i].name);
		free(z->a[i].data);
	}
	free(z->a);
	for (int i = 0; i < z->n_skipped; i++) {
		free(z->skipped[i].name);
		free(z->skipped[i].why);
	}
	free(z->skipped);
	memset(z, 0, sizeof *z);
}

struct npz_array *npz_find(const struct npz *z, const char *name)
{
	for (int i = 0; i < z->n; i++)
		if (!strcmp(z->a[i].name, name))
			return &z->a[i];
	return NULL;
}

struct npz_array *npz_add(struct npz *z, const char *name, enum ir_dtype dt,
			  int rank, const int64_t *shape, const void *data)
{
	if ((unsigned)dt >= DT_COUNT)
		return err_set("array '%s': bad dtype %d", name, (int)dt), NULL;
	if (rank < 0 || rank > IR_MAX_RANK)
		return err_set("array '%s': rank %d is outside 0..%d", name, rank,
			       IR_MAX_RANK), NULL;
	int64_t numel = shape_numel(rank, shape, dtype_size(dt));
	if (numel < 0)
		return err_set("array '%s': negative or too large shape", name), NULL;
	if ((uint64_t)numel > SIZE_MAX / dtype_size(dt))
		return err_set("array '%s': too large", name), NULL;
	if (npz_find(z, name))
		return err_set("array '%s' already present", name), NULL;

	grow_array((void **)&z->a, &z->cap, z->n + 1, sizeof *z->a);
	struct npz_array *a = &z->a[z->n++];
	memset(a, 0, sizeof *a);
	a->name = xstrdup(name);
	a->dtype = dt;
	a->rank = rank;
	if (rank)
		memcpy(a->shape, shape, (size_t)rank * sizeof *shape);
	a->nbytes = (size_t)numel * dtype_size(dt);
	a->data = xaligned(a->nbytes);
	if (data)
		memcpy(a->data, data, a->nbytes);
	else
		memset(a->data, 0, a->nbytes);
	return a;
}

int npz_missing(const struct npz *z, const char *file, const char *name, const char *what)
{
	for (int i = 0; i < z->n_skipped; i++)
		if (!strcmp(z->skipped[i].name, name))
			return err_set("'%s': array '%s' for %s '%s' cannot be used: %s", file, name,
				       what, name, z->skipped[i].why);
	size_t cap = 256, len = 0;
	char *list = xmalloc(cap);
	list[0] = 0;
	for (int i = 0; i < z->n; i++) {
		size_t need = len + strlen(z->a[i].name) + 5;
		if (need > cap)
			list = xrealloc(list, cap = need * 2);
		len += (size_t)sprintf(list + len, "%s'%s'", i ? ", " : "", z->a[i].name);
	}
	if (z->n)
		err_set("'%s': no array for %s '%s' (the file holds %s)", file, what, name, list);
	else
		err_set("'%s': no array for %s '%s' (the file holds no arrays)", file, what, name);
	free(list);
	return -1;
}

/* ---- conversion ------------------------------------------------------- */

static float f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16;
	uint32_t e = (h >> 10) & 0x1f, m = h & 0x3ff, bits;
	float f;
	if (e == 0) {                  /* zero or subnormal: m * 2^-24 */
		f = ldexpf((float)m, -24);
		return sign ? -f : f;
	}
	if (e == 31)                   /* inf or NaN */
		bits = sign | 0x7f800000u | m << 13;
	else
		bits = sign | (e + 112) << 23 | m << 13;
	memcpy(&f, &bits, sizeof f);
	return f;
}

float *npz_to_f32(const struct npz_array *a)
{
	size_t n = (size_t)npz_numel(a);
	float *out = xmalloc(n * sizeof *out);
	const void *d = a->data;
	for (size_t i = 0; i < n; i++) {
		switch (a->dtype) {
		case DT_F32: out[i] = ((const float *)d)[i]; break;
		case DT_F16: out[i] = f16_to_f32(((const uint16_t *)d)[i]); break;
		case DT_BF16: {
			uint32_t bits = (uint32_t)((const uint16_t *)d)[i] << 16;
			memcpy(&out[i], &bits, sizeof bits);
			break;
		}
		case DT_I8: out[i] = ((const int8_t *)d)[i]; break;
		case DT_U8: out[i] = ((const uint8_t *)d)[i]; break;
		case DT_I16: out[i] = ((const int16_t *)d)[i]; break;
		case DT_I32: out[i] = (float)((const int32_t *)d)[i]; break;
		case DT_I64: out[i] = (float)((const int64_t *)d)[i]; break;
		case DT_BOOL: out[i] = ((const uint8_t *)d)[i] != 0; break;
		case DT_F64: out[i] = (float)((const double *)d)[i]; break;
		case DT_U16: out[i] = ((const uint16_t *)d)[i]; break;
		case DT_U32: out[i] = (float)((const uint32_t *)d)[i]; break;
		case DT_U64: out[i] = (float)((const uint64_t *)d)[i]; break;
		default: out[i] = NAN; break;
		}
	}
	return out;
}
