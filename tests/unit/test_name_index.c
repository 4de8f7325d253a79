/* test_name_index - the name index: put, get, duplicates kept first, growth
 * past many slots, and the empty index. */
#include <stdio.h>

#include "ir/name_index.h"

#include "check.h"

int main(void)
{
	struct name_index x = { 0 };
	CHECK(name_index_get(&x, "a") == -1);
	CHECK(name_index_put(&x, "a", 7) == -1);
	CHECK(name_index_get(&x, "a") == 7);
	CHECK(name_index_put(&x, "a", 9) == 7);     /* the first value stays */
	CHECK(name_index_get(&x, "a") == 7 && x.n == 1);
	CHECK(name_index_get(&x, "b") == -1);

	/* many names: every one found, none confused, after several growths */
	char name[32];
	for (int i = 0; i < 5000; i++) {
		snprintf(name, sizeof name, "t%d", i);
		CHECK(name_index_put(&x, name, i) == -1);
	}
	int bad = 0;
	for (int i = 0; i < 5000; i++) {
		snprintf(name, sizeof name, "t%d", i);
		bad += name_index_get(&x, name) != i;
	}
	CHECK(bad == 0 && x.n == 5001 && x.cap >= 2 * x.n);
	CHECK(name_index_get(&x, "t5000") == -1 && name_index_get(&x, "") == -1);
	name_index_free(&x);
	CHECK(x.cap == 0 && name_index_get(&x, "a") == -1);
	return check_report("test_name_index");
}
