/* test_ir - the IR file format (formats/tpuc-ir.5): write/read round trips
 * of both dialects with every attribute kind, the header as the page lays
 * it out, determinism, and clean errors (never crashes) on truncated,
 * foreign, future-version and corrupted files.
 */
#include <math.h>
#include <msgpack.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ir/base.h"
#include "ir/ir.h"

#include "check.h"

static char dir[64];

static const char *tmp_path(const char *name)
{
	static char buf[4][128];
	static int k;
	k = (k + 1) % 4;
	snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
	return buf[k];
}

static unsigned char *slurp(const char *path, size_t *len)
{
	void *buf;
	if (file_read_all(path, &buf, len) < 0)
		return NULL;
	return buf;
}

static void spit(const char *path, const void *buf, size_t len)
{
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(buf, 1, len, f) != len) {
		perror(path);
		exit(1);
	}
	fclose(f);
}

static uint64_t get_u64(const unsigned char *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* conv -> relu, as in the worked example of lib/ir/ir.h, plus a quantised
 * tensor and attributes of every kind.  tpu != 0 makes it a Tpu graph with
 * chip, mode, addresses, groups and placement. */
static struct ir_graph *sample(int tpu)
{
	struct ir_graph *g = graph_new(tpu ? DIALECT_TPU : DIALECT_TOP,
				       tpu ? STAGE_ADDRESSED : STAGE_ORIGIN);
	g->name = xstrdup("sample");
	if (tpu) {
		g->chip = xstrdup("tpu-a");
		g->mode = MODE_INT8;
		g->neuron_bytes = 4096;
		g->coeff_bytes = 576;
	}
	float w[4 * 3 * 3 * 3], b[4] = { 0.5f, -1, 1e-30f, -0.0f };
	for (int i = 0; i < (int)ARRAY_LEN(w); i++)
		w[i] = (float)sin(i * 0.7) * 3;
	int x = graph_add_tensor(g, "x", DT_F32, 4, (int64_t[]){1, 3, 8, 8});
	int wi = graph_add_weight(g, "/conv/w:0", DT_F32, 4, (int64_t[]){4, 3, 3, 3}, w);
	int bi = graph_add_weight(g, "conv.b", DT_F32, 1, (int64_t[]){4}, b);
	int8_t q[5] = { -128, -1, 0, 1, 127 };
	int qi = graph_add_weight(g, "q", DT_I8, 1, (int64_t[]){5}, q);
	int8_t s = 42;   /* Add takes one dtype (i64 weights: the shape tensors of ir-format.bats) */
	int si = graph_add_weight(g, "scalar", DT_I8, 0, NULL, &s);
	int y = graph_add_tensor(g, "y", DT_F32, 4, (int64_t[]){1, 4, 8, 8});
	int z = graph_add_tensor(g, "z", DT_F32, 4, (int64_t[]){1, 4, 8, 8});
	g->tensors[qi].scale = 0.125f;
	g->tensors[qi].zero_point = -3;
	if (tpu) {
		g->tensors[x].addr = 0;
		g->tensors[y].addr = 1024;
		g->tensors[wi].addr = 0x100000000LL;
	}
	/* Top Conv takes at most 3 inputs; the Tpu one shows an absent input */
	int c = graph_add_op(g, OP_CONV, "conv0", tpu ? 4 : 3, (int[]){x, wi, bi, -1}, 1, (int[]){y});
	op_set_ints(&g->ops[c], "pads", 4, (int64_t[]){1, 1, 1, 1});
	op_set_ints(&g->ops[c], "strides", 2, (int64_t[]){1, 1});
	op_set_ints(&g->ops[c], "empty_ints", 0, NULL);
	op_set_int(&g->ops[c], "group", 1);
	op_set_int(&g->ops[c], "negative", -5000000000LL);
	op_set_float(&g->ops[c], "epsilon", 1e-5);
	op_set_floats(&g->ops[c], "scales", 3, (float[]){0.25f, -1.5f, 3e-7f});
	op_set_floats(&g->ops[c], "no_floats", 0, NULL);
	op_set_str(&g->ops[c], "auto_pad", "NOTSET");
	int r = graph_add_op(g, OP_RELU, "relu0", 1, (int[]){y}, 1, (int[]){z});
	/* q and scalar are consumed by an Identity-free Add so they are used. */
	int a = graph_add_tensor(g, "sum", DT_I8, 1, (int64_t[]){5});
	int ad = graph_add_op(g, OP_ADD, "add0", 2, (int[]){qi, si}, 1, (int[]){a});
	if (tpu) {
		g->ops[c].group = 0;
		g->ops[c].place = PLACE_LOCAL;
		g->ops[r].group = 0;
		g->ops[r].place = PLACE_LOCAL;
		g->ops[ad].place = PLACE_GLOBAL;
	}
	graph_set_io(g, 1, &x, 2, (int[]){ z, a });
	return g;
}

static int same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

static void check_same(const struct ir_graph *a, const struct ir_graph *b);

static void check_same_attr(const struct ir_attr *a, const struct ir_attr *b)
{
	CHECK(!strcmp(a->name, b->name));
	CHECK(a->kind == b->kind);
	if (a->kind != b->kind)
		return;
	switch (a->kind) {
	case ATTR_INT: CHECK(a->i == b->i); break;
	case ATTR_FLOAT: CHECK(a->f == b->f); break;
	case ATTR_STR: CHECK(!strcmp(a->s, b->s)); break;
	case ATTR_INTS:
		CHECK(a->n == b->n && !memcmp(a->ints, b->ints, sizeof(int64_t) * (size_t)a->n));
		break;
	case ATTR_FLOATS:
		CHECK(a->n == b->n && !memcmp(a->floats, b->floats, sizeof(float) * (size_t)a->n));
		break;
	case ATTR_GRAPH:
		check_same(a->graph, b->graph);
		break;
	}
}

static void check_same(const struct ir_graph *a, const struct ir_graph *b)
{
	CHECK(a->dialect == b->dialect && a->stage == b->stage);
	CHECK(same_str(a->name, b->name) && same_str(a->chip, b->chip) && a->mode == b->mode);
	CHECK(a->neuron_bytes == b->neuron_bytes && a->coeff_bytes == b->coeff_bytes);
	CHECK(a->n_tensors == b->n_tensors && a->n_ops == b->n_ops);
	if (a->n_tensors != b->n_tensors || a->n_ops != b->n_ops)
		return;
	for (int i = 0; i < a->n_tensors; i++) {
		const struct ir_tensor *s = &a->tensors[i], *t = &b->tensors[i];
		CHECK(!strcmp(s->name, t->name) && s->dtype == t->dtype && s->rank == t->rank);
		CHECK(!memcmp(s->shape, t->shape, sizeof(int64_t) * (size_t)s->rank));
		CHECK(!s->data == !t->data && s->nbytes == t->nbytes);
		if (s->data && t->data) {
			CHECK(!memcmp(s->data, t->data, s->nbytes));
			CHECK((uintptr_t)t->data % 64 == 0);
		}
		CHECK(s->scale == t->scale && s->zero_point == t->zero_point && s->addr == t->addr);
	}
	for (int i = 0; i < a->n_ops; i++) {
		const struct ir_op *p = &a->ops[i], *q = &b->ops[i];
		CHECK(p->type == q->type && !strcmp(p->name, q->name));
		CHECK(p->n_in == q->n_in && !memcmp(p->in, q->in, sizeof(int) * (size_t)p->n_in));
		CHECK(p->n_out == q->n_out && !memcmp(p->out, q->out, sizeof(int) * (size_t)p->n_out));
		CHECK(p->group == q->group && p->place == q->place);
		CHECK(p->n_attr == q->n_attr);
		for (int j = 0; j < p->n_attr && j < q->n_attr; j++)
			check_same_attr(&p->attr[j], &q->attr[j]);
	}
	CHECK(a->n_inputs == b->n_inputs && !memcmp(a->inputs, b->inputs, sizeof(int) * (size_t)a->n_inputs));
	CHECK(a->n_outputs == b->n_outputs && !memcmp(a->outputs, b->outputs, sizeof(int) * (size_t)a->n_outputs));
}

/* Write, read back, compare; write the read graph again and expect the
 * same bytes (borrowed weights write like owned ones). */
static void test_round_trip(int tpu)
{
	struct ir_graph *g = sample(tpu), *h = NULL;
	const char *p1 = tmp_path("a.ir"), *p2 = tmp_path("b.ir");
	CHECK(ir_write(p1, g) == 0);
	CHECK(ir_read(p1, &h) == 0);
	if (h) {
		check_same(g, h);
		CHECK(ir_write(p2, h) == 0);
		size_t n1 = 0, n2 = 0;
		unsigned char *b1 = slurp(p1, &n1), *b2 = slurp(p2, &n2);
		CHECK(b1 && b2 && n1 == n2 && !memcmp(b1, b2, n1));
		free(b1);
		free(b2);
	}
	graph_free(h);
	graph_free(g);
}

/* The header and layout of formats/tpuc-ir.5. */
static void test_header(void)
{
	struct ir_graph *g = sample(0);
	const char *p = tmp_path("h.ir");
	CHECK(ir_write(p, g) == 0);
	size_t len = 0;
	unsigned char *b = slurp(p, &len);
	CHECK(b && len >= 64);
	if (b && len >= 64) {
		uint64_t glen = get_u64(b + 16), doff = get_u64(b + 24), dlen = get_u64(b + 32);
		CHECK(!memcmp(b, "TPUC-IR\0", 8));
		CHECK(b[8] == IR_FORMAT_VERSION && !b[9] && !b[10] && !b[11]);
		CHECK(!b[12] && !b[13] && !b[14] && !b[15]);
		for (int i = 40; i < 64; i++)
			CHECK(b[i] == 0);
		CHECK(doff % 64 == 0 && doff >= 64 + glen && doff < 64 + glen + 64);
		CHECK(dlen % 64 == 0 && doff + dlen == len);
		/* Payloads: w (432 bytes) at 0, b at 448, q at 512, scalar at 576. */
		CHECK(dlen == 640);
		CHECK(!memcmp(b + doff, g->tensors[1].data, 432));
		CHECK(!memcmp(b + doff + 448, g->tensors[2].data, 16));
		CHECK(!memcmp(b + doff + 512, g->tensors[3].data, 5));
		/* The graph is one msgpack map spanning graph_length bytes,
		 * with the keys the page requires. */
		msgpack_unpacked u;
		msgpack_unpacked_init(&u);
		size_t off = 0;
		int rc = msgpack_unpack_next(&u, (const char *)b + 64, glen, &off);
		CHECK(rc == MSGPACK_UNPACK_SUCCESS && off == glen);
		CHECK(u.data.type == MSGPACK_OBJECT_MAP);
		if (rc == MSGPACK_UNPACK_SUCCESS && u.data.type == MSGPACK_OBJECT_MAP) {
			static const char *const keys[] = { "dialect", "stage", "name", "neuron_bytes",
				"coeff_bytes", "tensors", "ops", "inputs", "outputs" };
			CHECK(u.data.via.map.size == ARRAY_LEN(keys));
			for (size_t k = 0; k < ARRAY_LEN(keys); k++) {
				int found = 0;
				for (uint32_t i = 0; i < u.data.via.map.size; i++) {
					const msgpack_object *key = &u.data.via.map.ptr[i].key;
					found |= key->type == MSGPACK_OBJECT_STR &&
						 key->via.str.size == strlen(keys[k]) &&
						 !memcmp(key->via.str.ptr, keys[k], strlen(keys[k]));
				}
				if (!found)
					fprintf(stderr, "test_ir: graph map lacks '%s'\n", keys[k]);
				CHECK(found);
			}
		}
		msgpack_unpacked_destroy(&u);
		for (uint64_t i = 64 + glen; i < doff; i++)
			CHECK(b[i] == 0);
	}
	free(b);
	graph_free(g);
}

/* Every proper prefix of a valid file is refused with a message. */
static void test_truncated(void)
{
	struct ir_graph *g = sample(1), *h;
	const char *p = tmp_path("t.ir"), *q = tmp_path("cut.ir");
	CHECK(ir_write(p, g) == 0);
	size_t len = 0;
	unsigned char *b = slurp(p, &len);
	for (size_t n = 0; b && n < len; n++) {
		spit(q, b, n);
		h = (struct ir_graph *)1;
		int rc = ir_read(q, &h);
		CHECK(rc == -1 && h == NULL);
		CHECK(strstr(err_msg(), q) != NULL);
		if (rc == 0)
			graph_free(h);
	}
	spit(q, b, 10);
	ir_read(q, &h);
	CHECK(strstr(err_msg(), "bad magic") != NULL);
	spit(q, b, 100);
	ir_read(q, &h);
	CHECK(strstr(err_msg(), "truncated") != NULL);
	free(b);
	graph_free(g);
}

static void test_foreign(void)
{
	struct ir_graph *h;
	const char *p = tmp_path("f.ir");
	unsigned char junk[200];
	memset(junk, 'x', sizeof junk);
	spit(p, junk, sizeof junk);
	CHECK(ir_read(p, &h) == -1 && !h);
	CHECK(strstr(err_msg(), "bad magic") != NULL);

	spit(p, "", 0);
	CHECK(ir_read(p, &h) == -1 && !h);
	CHECK(strstr(err_msg(), "empty") != NULL);

	CHECK(ir_read(tmp_path("absent.ir"), &h) == -1 && !h);
	CHECK(strstr(err_msg(), "absent.ir") && strstr(err_msg(), "No such file"));

	/* A future version is named, not misread. */
	struct ir_graph *g = sample(0);
	CHECK(ir_write(p, g) == 0);
	size_t len;
	unsigned char *b = slurp(p, &len);
	if (b) {
		b[8] = 2;
		spit(p, b, len);
		CHECK(ir_read(p, &h) == -1 && !h);
		CHECK(strstr(err_msg(), "version 2") != NULL);
	}
	free(b);
	graph_free(g);
}

/* Flipped bytes anywhere in the graph: an error or a valid graph, never a
 * crash (the sanitizer build watches the reads). */
static void test_corrupt(void)
{
	struct ir_graph *g = sample(1), *h;
	const char *p = tmp_path("c.ir"), *q = tmp_path("bad.ir");
	CHECK(ir_write(p, g) == 0);
	size_t len;
	unsigned char *b = slurp(p, &len);
	if (!b) {
		CHECK(0);
		graph_free(g);
		return;
	}
	uint64_t glen = get_u64(b + 16);
	unsigned char *c = xmalloc(len);
	uint32_t seed = 12345;
	int refused = 0;
	for (int trial = 0; trial < 2000; trial++) {
		memcpy(c, b, len);
		for (int k = 0; k < 1 + trial % 3; k++) {
			seed = seed * 1103515245u + 12345u;
			size_t at = 64 + (seed >> 8) % glen;
			seed = seed * 1103515245u + 12345u;
			c[at] ^= (unsigned char)(1u << ((seed >> 16) % 8));
		}
		spit(q, c, len);
		if (ir_read(q, &h) == 0) {
			CHECK(ir_verify(h) == 0);
			graph_free(h);
		} else {
			CHECK(h == NULL && err_msg()[0]);
			refused++;
		}
	}
	CHECK(refused > 0);
	free(c);
	free(b);
	graph_free(g);
}

/* ir_write refuses an invalid graph and leaves no file behind. */
static void test_write_invalid(void)
{
	struct ir_graph *g = sample(0);
	g->ops[1].in[0] = g->ops[1].out[0];     /* relu reads its own output */
	const char *p = tmp_path("invalid.ir");
	CHECK(ir_write(p, g) == -1);
	CHECK(strstr(err_msg(), "invalid.ir") != NULL);
	CHECK(access(p, F_OK) != 0);
	graph_free(g);
}

static void test_expect(void)
{
	struct ir_graph *g = sample(0);
	CHECK(ir_expect(g, "m.top", DIALECT_TOP, 1u << STAGE_ORIGIN) == 0);
	CHECK(ir_expect(g, "m.top", DIALECT_TPU, 1u << STAGE_LOWERED) == -1);
	CHECK(strstr(err_msg(), "'m.top'") && strstr(err_msg(), "origin") && strstr(err_msg(), "lowered"));
	CHECK(ir_expect(g, "m.top", DIALECT_TOP, 1u << STAGE_CANONICAL) == -1);
	CHECK(strstr(err_msg(), "canonical") != NULL);
	graph_free(g);
}

/* Elements of a shape: 0 when an extent is 0, even after extents whose
 * product alone overflows (an empty ONNX initializer [2^32, 2^31, 0] once
 * asked for 2^63 bytes); saturated when it truly overflows. */
static void test_numel(void)
{
	struct ir_graph *g = graph_new(DIALECT_TOP, STAGE_ORIGIN);
	int e = graph_add_tensor(g, "e", DT_I8, 3, (int64_t[]){ 1LL << 32, 1LL << 31, 0 });
	int h = graph_add_tensor(g, "h", DT_I8, 2, (int64_t[]){ 1LL << 32, 1LL << 31 });
	CHECK(tensor_numel(&g->tensors[e]) == 0 && tensor_bytes(&g->tensors[e]) == 0);
	CHECK(tensor_numel(&g->tensors[h]) == INT64_MAX);
	graph_free(g);
}

int main(void)
{
	snprintf(dir, sizeof dir, "%s", "/tmp/test_ir.XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_round_trip(0);
	test_round_trip(1);
	test_header();
	test_truncated();
	test_foreign();
	test_corrupt();
	test_write_invalid();
	test_expect();
	test_numel();

	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "test_ir: cannot remove %s\n", dir);
	return check_report("test_ir");
}
