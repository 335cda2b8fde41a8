/* BrainVision headers written here: both orientations read back through
 * the source (each value the stored number times its channel's
 * resolution), a channel name with an escaped comma, and each header
 * entry dsview refuses named in the error. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "dsview/source.h"
#include "fixture.h"
#include "formats/bv/bv.h"
#include "source/source.h"

static char dir[] = "/tmp/dsv-test-bv-XXXXXX";

/* x.vhdr for 3 channels of 5 int16 samples in orientation o, extra lines
 * in [Common Infos]; x.eeg holding 0 .. 14. */
static const char *write_pair(const char *o, const char *extra, const char *chans)
{
	char text[2048];
	int16_t v[15];
	for (int i = 0; i < 15; i++)
		v[i] = (int16_t)(i - 7);
	scratch_write(dir, "x.eeg", v, sizeof(v));
	snprintf(text, sizeof(text),
		 "Brain Vision Data Exchange Header File Version 1.0\r\n"
		 "[Common Infos]\r\nDataFile=x.eeg\r\nDataFormat=BINARY\r\n"
		 "DataOrientation=%s\r\nNumberOfChannels=3\r\nSamplingInterval=1000\r\n%s"
		 "[Binary Infos]\r\nBinaryFormat=INT_16\r\n[Channel Infos]\r\n%s",
		 o, extra, chans ? chans : "Ch1=A\\1B,,0.5,uV\r\nCh2=C,,,uV\r\nCh3=D,,2,mV\r\n");
	return scratch_write(dir, "x.vhdr", text, strlen(text));
}

static void check_values(int vectorized)
{
	static const double res[3] = { 0.5, 1, 2 };
	dsv_source *s;
	dsv_errbuf eb;
	double got[15];
	const char *path = write_pair(vectorized ? "VECTORIZED" : "MULTIPLEXED", "", NULL);
	assert_int_equal(dsv_source_open(path, &s, &eb), 0);
	const dsv_source_info *in = dsv_source_get_info(s);
	assert_true(in->shape[0] == 1 && in->shape[1] == 3 && in->shape[2] == 5);
	assert_int_equal(in->dtype, DSV_F64);
	assert_non_null(strstr(in->attrs, "\"A,B\""));
	assert_non_null(strstr(in->attrs, "\"sample_rate\":1000"));
	for (uint64_t e = 0; e < 15; e++)
		for (uint64_t n = 1; e + n <= 15; n++) {
			dsv_chunk_ref ref = { .elem_start = e, .nelems = n, .fallback = 1 };
			assert_int_equal(dsv_source_read_fallback(s, &ref, got, sizeof(got)), 0);
			for (uint64_t k = 0; k < n; k++) {
				uint64_t c = (e + k) / 5, t = (e + k) % 5;
				int raw = vectorized ? (int)(c * 5 + t) - 7 : (int)(t * 3 + c) - 7;
				assert_true(got[k] == raw * res[c]);
			}
		}
	dsv_source_close(s);
}

static void test_orientations(void **state)
{
	(void)state;
	check_values(0);
	check_values(1);
}

static void refused(const char *o, const char *extra, const char *chans, int code,
		    const char *words)
{
	dsv_source *s;
	dsv_errbuf eb;
	const char *path = write_pair(o, extra, chans);
	int err = dsv_source_open(path, &s, &eb);
	if (err != code || !strstr(eb.msg, words) || strcmp(eb.file, path))
		fail_msg("%d (%s), want %d with '%s'", err, eb.msg, code, words);
}

static void test_refused(void **state)
{
	(void)state;
	refused("MULTIPLEXED", "DataFormat=ASCII\r\n", NULL, DSV_ERR_UNSUPPORTED,
		"[Common Infos] DataFormat: not BINARY");
	refused("DIAGONAL", "", NULL, DSV_ERR_UNSUPPORTED, "DataOrientation");
	refused("VECTORIZED", "", "Ch1=A,,1,uV\r\nCh3=D,,2,mV\r\n", DSV_ERR_FORMAT,
		"no Ch2 of 3 channels");
	refused("VECTORIZED", "", "Ch1=A,,1,uV\r\nCh2=B,,x,uV\r\nCh3=D,,2,mV\r\n",
		DSV_ERR_UNSUPPORTED, "Ch2: a resolution that is not a number");
	refused("VECTORIZED", "", "Ch4=A,,1,uV\r\n", DSV_ERR_UNSUPPORTED,
		"Ch4: not a channel of NumberOfChannels");
	refused("VECTORIZED", "SamplingInterval=-3\r\n", NULL, DSV_ERR_UNSUPPORTED,
		"SamplingInterval: not a positive number");
}

SCRATCH_GROUP_FIXTURES(dir)

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_orientations),
		cmocka_unit_test(test_refused),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
