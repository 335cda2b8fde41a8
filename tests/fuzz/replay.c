/*
 * Runs a fuzz target on files, for `make test` (gcc, no libFuzzer): every
 * argument is a file or a directory whose files are run in name order.
 * A crash or abort names the input on stderr and kills the process with
 * the signal; a file that cannot be read fails the run.
 *
 *   fuzz_npy tests/fuzz/corpus/npy
 */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"

static const char *current; /* the input being run, for the crash message */

static void on_crash(int sig)
{
	static const char msg[] = "replay: crashed on ";
	if (current) {
		(void)!write(2, msg, sizeof(msg) - 1);
		(void)!write(2, current, strlen(current));
		(void)!write(2, "\n", 1);
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	struct stat st;
	if (!f || fstat(fileno(f), &st) != 0) {
		fprintf(stderr, "replay: cannot read %s\n", path);
		if (f)
			fclose(f);
		return 1;
	}
	size_t n = (size_t)st.st_size;
	uint8_t *buf = malloc(n ? n : 1);
	if (!buf || fread(buf, 1, n, f) != n) {
		fprintf(stderr, "replay: cannot read %s\n", path);
		fclose(f);
		free(buf);
		return 1;
	}
	fclose(f);
	current = path;
	LLVMFuzzerTestOneInput(buf, n);
	current = NULL;
	free(buf);
	return 0;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

int main(int argc, char **argv)
{
	int files = 0, bad = 0;
	static const int sigs[] = { SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL };
	for (size_t k = 0; k < sizeof(sigs) / sizeof(*sigs); k++)
		signal(sigs[k], on_crash);
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) != 0) {
			fprintf(stderr, "replay: %s: no such file or directory\n", argv[i]);
			return 1;
		}
		if (!S_ISDIR(st.st_mode)) {
			bad |= run_file(argv[i]);
			files++;
			continue;
		}
		struct dirent **ents;
		int n = scandir(argv[i], &ents, NULL, by_name);
		for (int k = 0; k < n; k++) {
			char p[4096];
			if (ents[k]->d_name[0] != '.') {
				snprintf(p, sizeof(p), "%s/%s", argv[i], ents[k]->d_name);
				bad |= run_file(p);
				files++;
			}
			free(ents[k]);
		}
		free(ents);
	}
	printf("replayed %d input(s)\n", files);
	return bad || files == 0;
}
