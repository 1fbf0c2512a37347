/* replay_main.c — runs every file of the given corpus directories (or the
 * given files) through LLVMFuzzerTestOneInput, in name order, so a fuzz
 * corpus replays as an ordinary test without libFuzzer. Exit status: 0 when
 * every input ran (a broken invariant aborts the process), 1 on a read
 * error or an empty corpus, 2 on usage errors.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/fuzz/fuzz.h"

#define REPLAY_MAX_INPUT (4u << 20)

static int run_file(const char *path)
{
	FILE *fp = fopen(path, "rb");
	if (fp == NULL) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	uint8_t *buf = malloc(REPLAY_MAX_INPUT);
	if (buf == NULL) {
		fclose(fp);
		return -1;
	}
	size_t len = fread(buf, 1, REPLAY_MAX_INPUT, fp);
	int bad = ferror(fp);
	fclose(fp);
	if (bad) {
		fprintf(stderr, "replay: %s: read error\n", path);
		free(buf);
		return -1;
	}
	/* An exact-size copy, so ASan sees any read past the input. */
	uint8_t *exact = malloc(len ? len : 1);
	if (exact == NULL) {
		free(buf);
		return -1;
	}
	memcpy(exact, buf, len);
	free(buf);
	LLVMFuzzerTestOneInput(exact, len);
	free(exact);
	return 0;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int skip_dots(const struct dirent *d) { return d->d_name[0] != '.'; }

int main(int argc, char **argv)
{
	size_t ran = 0;
	int status = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s CORPUS_DIR_OR_FILE...\n", argv[0]);
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) != 0) {
			fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
			return 1;
		}
		if (!S_ISDIR(st.st_mode)) {
			status |= run_file(argv[i]) != 0;
			ran++;
			continue;
		}
		struct dirent **names;
		int n = scandir(argv[i], &names, skip_dots, by_name);
		if (n < 0) {
			fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
			return 1;
		}
		for (int k = 0; k < n; k++) {
			char path[4096];
			snprintf(path, sizeof(path), "%s/%s", argv[i], names[k]->d_name);
			status |= run_file(path) != 0;
			ran++;
			free(names[k]);
		}
		free(names);
	}
	printf("replay: %zu inputs, %s\n", ran, status ? "read errors" : "all ran");
	return (status || ran == 0) ? 1 : 0;
}
