/* The net room's configuration (src/net/config.c): endpoint, region and
 * credentials from the AWS variables and from ~/.aws profiles, s3:// URLs
 * made path-style, the source-spec split that must not cut a URL at
 * its scheme, a presigned URL's query (never shown, its expiry read), and
 * bucket listings (their URL, their XML). No server: what needs one is in tests/e2e/test_s3.py. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/str.h"
#include "formats/formats.h"
#include "net/net_i.h"

static char dir[] = "/tmp/dsv-test-net-XXXXXX";
static char creds[4096], conf[4096];

static const char *const vars[] = {
	"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL",  "AWS_REGION",
	"AWS_DEFAULT_REGION",  "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
	"AWS_SESSION_TOKEN",   "AWS_PROFILE",       "AWS_SHARED_CREDENTIALS_FILE",
	"AWS_CONFIG_FILE",     "AWS_CA_BUNDLE",
};

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int setup(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
	setenv("HOME", dir, 1); /* no ~/.aws of the machine's */
	dsv_net_settings_clear();
	return 0;
}

static void defaults_without_anything(void **state)
{
	dsv_net_config c;
	(void)state;
	assert_int_equal(dsv_net_config_load(&c), 0);
	assert_string_equal(c.region, "us-east-1");
	assert_string_equal(c.endpoint, "https://s3.us-east-1.amazonaws.com");
	assert_null(c.key_id);
	assert_null(c.secret);
	dsv_net_config_free(&c);
}

static void environment_first(void **state)
{
	dsv_net_config c;
	(void)state;
	setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:8333///", 1);
	setenv("AWS_ENDPOINT_URL_S3", "http://10.0.0.1:9000/", 1);
	setenv("AWS_DEFAULT_REGION", "eu-west-3", 1);
	setenv("AWS_ACCESS_KEY_ID", "AKID", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "SECRET", 1);
	setenv("AWS_SESSION_TOKEN", "TOKEN", 1);
	assert_int_equal(dsv_net_config_load(&c), 0);
	assert_string_equal(c.endpoint, "http://10.0.0.1:9000"); /* _S3 wins, no '/' */
	assert_string_equal(c.region, "eu-west-3");
	assert_string_equal(c.key_id, "AKID");
	assert_string_equal(c.secret, "SECRET");
	assert_string_equal(c.token, "TOKEN");
	dsv_net_config_free(&c);
	assert_null(c.secret);
	unsetenv("AWS_ENDPOINT_URL_S3");
	setenv("AWS_REGION", "ap-south-1", 1);
	assert_int_equal(dsv_net_config_load(&c), 0);
	assert_string_equal(c.endpoint, "http://127.0.0.1:8333");
	assert_string_equal(c.region, "ap-south-1"); /* AWS_REGION before the default */
	dsv_net_config_free(&c);
}

static void profiles_from_the_files(void **state)
{
	dsv_net_config c;
	(void)state;
	write_file(creds, "[default]\naws_access_key_id = DEF\naws_secret_access_key = defsecret\n"
			  "[lab]\naws_access_key_id = LAB\naws_secret_access_key = labsecret\n"
			  "aws_session_token = labtoken\n[half]\naws_access_key_id = ONLY\n");
	write_file(conf, "[default]\nregion = us-west-2\n[profile lab]\nregion = eu-north-1\n"
			 "endpoint_url = http://store.lab:8333\nca_bundle = /etc/lab-ca.pem\n");
	setenv("AWS_SHARED_CREDENTIALS_FILE", creds, 1);
	setenv("AWS_CONFIG_FILE", conf, 1);

	assert_int_equal(dsv_net_config_load(&c), 0);
	assert_string_equal(c.key_id, "DEF");
	assert_string_equal(c.secret, "defsecret");
	assert_null(c.token);
	assert_string_equal(c.region, "us-west-2");
	assert_string_equal(c.endpoint, "https://s3.us-west-2.amazonaws.com");
	dsv_net_config_free(&c);

	setenv("AWS_PROFILE", "lab", 1);
	assert_int_equal(dsv_net_config_load(&c), 0);
	assert_string_equal(c.key_id, "LAB");
	assert_string_equal(c.token, "labtoken");
	assert_string_equal(c.region, "eu-north-1");
	assert_string_equal(c.endpoint, "http://store.lab:8333");
	assert_string_equal(c.ca_bundle, "/etc/lab-ca.pem");
	dsv_net_config_free(&c);
	setenv("AWS_CA_BUNDLE", "/tmp/mine.pem", 1);
	assert_int_equal(dsv_net_config_load(&c), 0);
	assert_string_equal(c.ca_bundle, "/tmp/mine.pem");
	dsv_net_config_free(&c);
	unsetenv("AWS_CA_BUNDLE");

	/* half a key pair signs nothing: unsigned, not half-signed */
	setenv("AWS_PROFILE", "half", 1);
	assert_int_equal(dsv_net_config_load(&c), 0);
	assert_null(c.key_id);
	assert_null(c.secret);
	dsv_net_config_free(&c);

	/* the variables win over the files */
	setenv("AWS_ACCESS_KEY_ID", "ENV", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "envsecret", 1);
	assert_int_equal(dsv_net_config_load(&c), 0);
	assert_string_equal(c.key_id, "ENV");
	dsv_net_config_free(&c);
}

static void s3_urls_path_style(void **state)
{
	char endpoint[] = "http://h:1", region[] = "r";
	dsv_net_config c = { .endpoint = endpoint, .region = region };
	char *out;
	int is_s3;
	(void)state;
	assert_int_equal(dsv_net_url_make(&c, "s3://b/dir/a b+c~.npy", &out, &is_s3), 0);
	assert_true(is_s3);
	assert_string_equal(out, "http://h:1/b/dir/a%20b%2Bc~.npy");
	free(out);
	assert_int_equal(
		dsv_net_url_make(&c, "https://x.org/a.npy?X-Amz-Signature=1", &out, &is_s3), 0);
	assert_false(is_s3);
	assert_string_equal(out, "https://x.org/a.npy?X-Amz-Signature=1");
	free(out);
	const char *bad[] = { "s3://",      "s3://b",    "s3://b/",    "s3:///k",
			      "s3://b?x/k", "ftp://h/k", "/data/a.npy" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(dsv_net_url_make(&c, bad[i], &out, &is_s3), DSV_ERR_INVALID);
		assert_null(out);
	}
}

static void open_refuses_a_bad_url_alone(void **state)
{
	dsv_net_obj *o = (dsv_net_obj *)1;
	dsv_errbuf eb;
	(void)state;
	assert_int_equal(dsv_net_open("s3://bucket-only", &o, &eb), DSV_ERR_INVALID);
	assert_null(o);
	assert_non_null(strstr(eb.msg, "s3://bucket-only"));
}

static void specs_keep_their_urls(void **state)
{
	char *file, *dset;
	(void)state;
	assert_int_equal(dsv_url_scheme_len("s3://b/k"), 5);
	assert_int_equal(dsv_url_scheme_len("https://h/k"), 8);
	assert_int_equal(dsv_url_scheme_len("/data/s3://x"), 0);
	assert_int_equal(dsv_spec_split("s3://b/a.npy", &file, &dset), 0);
	assert_string_equal(file, "s3://b/a.npy");
	assert_null(dset);
	free(file);
	assert_int_equal(dsv_spec_split("s3://b/run1.h5:/stim/x", &file, &dset), 0);
	assert_string_equal(file, "s3://b/run1.h5");
	assert_string_equal(dset, "/stim/x");
	free(file);
	free(dset);
	assert_int_equal(dsv_spec_split("http://127.0.0.1:8333/b/run1.h5:stim", &file, &dset), 0);
	assert_string_equal(file, "http://127.0.0.1:8333/b/run1.h5");
	assert_string_equal(dset, "/stim");
	free(file);
	free(dset);
}

static void presigned_urls_shown_without_query(void **state)
{
	const char *url = "https://h:9/b/run1.h5?X-Amz-Date=20261127T142200Z&X-Amz-Expires=90"
			  "&X-Amz-Signature=abc";
	time_t t = 0;
	(void)state;
	assert_int_equal(dsv_url_shown_len(url), strlen("https://h:9/b/run1.h5"));
	assert_int_equal(dsv_url_shown_len("/data/a?b.npy"), strlen("/data/a?b.npy"));
	assert_true(dsv_format_by_name(url, NULL) == dsv_format_named("hdf5"));
	assert_true(dsv_has_ext("https://h/a.NPY#x", ".npy"));
	assert_false(dsv_has_ext("https://h/a.npy.bak?x=.npy", ".npy"));
	assert_int_equal(dsv_net_presign_expiry(url, &t), 1);
	assert_int_equal((long long)t, 1795789320LL + 90); /* 2026-11-27T14:22:00Z */
	/* what says nothing of an expiry: no query, a part missing or bad */
	const char *none[] = { "https://h/a.npy",
			       "https://h/a.npy?X-Amz-Expires=90",
			       "https://h/a?X-Amz-Date=20261127T142200&X-Amz-Expires=90",
			       "https://h/a?X-Amz-Date=20261127T142200Z&X-Amz-Expires=9x",
			       "https://h/a?X-Amz-Date=2026112TT142200Z&X-Amz-Expires=9",
			       "https://h/a?X-Amz-Date=20261127T142200Z&X-Amz-Expires=" };
	for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
		t = 7;
		assert_int_equal(dsv_net_presign_expiry(none[i], &t), 0);
		assert_int_equal((long long)t, 7);
	}
}

static void listings_parsed_and_asked_for(void **state)
{
	char endpoint[] = "http://h:1";
	dsv_net_config c = { .endpoint = endpoint };
	dsv_net_listing l;
	dsv_errbuf eb;
	char *url;
	(void)state;
	const char *page = "<?xml version=\"1.0\"?><ListBucketResult xmlns=\"x\">"
			   "<Prefix>g.zarr/</Prefix><IsTruncated>true</IsTruncated>"
			   "<Contents><Key>g.zarr/.zgroup</Key></Contents>"
			   "<CommonPrefixes><Prefix>g.zarr/a/</Prefix></CommonPrefixes>"
			   "<CommonPrefixes><Prefix>g.zarr/b &amp; c/</Prefix></CommonPrefixes>"
			   "<NextContinuationToken>t/1=</NextContinuationToken></ListBucketResult>";
	assert_int_equal(dsv_net_list_parse(page, strlen(page), &l, &eb), 0);
	assert_int_equal(l.n, 2);
	assert_string_equal(l.prefixes[0], "g.zarr/a/");
	assert_string_equal(l.prefixes[1], "g.zarr/b & c/");
	assert_int_equal(l.nkeys, 1);
	assert_string_equal(l.keys[0], "g.zarr/.zgroup");
	assert_true(l.truncated);
	assert_string_equal(l.token, "t/1=");
	dsv_net_listing_free(&l);
	const char *bad[] = { "<ListBucketResult>", "<Error><Code>AccessDenied</Code></Error>",
			      "not xml", "" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(dsv_net_list_parse(bad[i], strlen(bad[i]), &l, &eb),
				 DSV_ERR_FORMAT);
		assert_null(l.prefixes);
		assert_null(l.keys);
		assert_null(l.token);
	}
	/* the query in SigV4's canonical order, every value encoded */
	assert_int_equal(dsv_net_list_url(&c, "s3://b/g.zarr/", NULL, 1000, &url), 0);
	assert_string_equal(url, "http://h:1/b?delimiter=%2F&list-type=2&max-keys=1000"
				 "&prefix=g.zarr%2F");
	free(url);
	assert_int_equal(dsv_net_list_url(&c, "s3://b/x y/g.zarr", "t/1=", 2, &url), 0);
	assert_string_equal(url, "http://h:1/b?continuation-token=t%2F1%3D&delimiter=%2F"
				 "&list-type=2&max-keys=2&prefix=x%20y%2Fg.zarr%2F");
	free(url);
	const char *no[] = { "https://h/g.zarr", "s3://b", "s3://b/", "s3://b/x?y" };
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
		assert_int_equal(dsv_net_list_url(&c, no[i], NULL, 5, &url), DSV_ERR_INVALID);
		assert_null(url);
	}
}

static void settings_win_and_pick_addressing(void **state)
{
	dsv_net_config c;
	dsv_errbuf eb;
	char *url;
	int is_s3;
	(void)state;
	/* AWS's own endpoint: virtual-hosted unless told otherwise */
	setenv("AWS_REGION", "eu-west-1", 1);
	assert_int_equal(dsv_net_config_load(&c), 0);
	assert_int_equal(dsv_net_url_make(&c, "s3://b/k/x.npy", &url, &is_s3), 0);
	assert_string_equal(url, "https://b.s3.eu-west-1.amazonaws.com/k/x.npy");
	free(url);
	assert_int_equal(dsv_net_list_url(&c, "s3://b/g.zarr", NULL, 9, &url), 0);
	assert_string_equal(url, "https://b.s3.eu-west-1.amazonaws.com/?delimiter=%2F&list-type=2"
				 "&max-keys=9&prefix=g.zarr%2F");
	free(url);
	dsv_net_config_free(&c);
	/* settings over the environment; an option over the manifest */
	setenv("AWS_ENDPOINT_URL", "http://env:1", 1);
	assert_int_equal(dsv_net_setting("endpoint", "http://opt:2", DSV_NET_FROM_OPTION, &eb), 0);
	assert_int_equal(dsv_net_setting("endpoint", "http://mf:3", DSV_NET_FROM_MANIFEST, &eb), 0);
	assert_int_equal(dsv_net_setting("region", "ap-south-2", DSV_NET_FROM_MANIFEST, &eb), 0);
	assert_int_equal(dsv_net_setting("addressing", "virtual", DSV_NET_FROM_MANIFEST, &eb), 0);
	assert_int_equal(dsv_net_config_load(&c), 0);
	assert_string_equal(c.endpoint, "http://opt:2");
	assert_string_equal(c.region, "ap-south-2");
	assert_int_equal(dsv_net_url_make(&c, "s3://b/k", &url, &is_s3), 0);
	assert_string_equal(url, "http://b.opt:2/k");
	free(url);
	dsv_net_config_free(&c);
	/* the profile named picks the credentials file's section */
	write_file(creds, "[default]\naws_access_key_id = D\naws_secret_access_key = d\n"
			  "[other]\naws_access_key_id = O\naws_secret_access_key = o\n");
	setenv("AWS_SHARED_CREDENTIALS_FILE", creds, 1);
	assert_int_equal(dsv_net_setting("profile", "other", DSV_NET_FROM_MANIFEST, &eb), 0);
	assert_int_equal(dsv_net_config_load(&c), 0);
	assert_string_equal(c.key_id, "O");
	dsv_net_config_free(&c);
	const char *bad[][2] = { { "endpoint", "ftp://x" },
				 { "endpoint", "http://u@h" },
				 { "endpoint", "http://h?x=1" },
				 { "region", "EU West" },
				 { "addressing", "sideways" },
				 { "profile", "a]b" },
				 { "colour", "red" },
				 { "region", "" } };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(dsv_net_setting(bad[i][0], bad[i][1], DSV_NET_FROM_OPTION, &eb),
				 DSV_ERR_INVALID);
}

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	snprintf(creds, sizeof(creds), "%s/credentials", dir);
	snprintf(conf, sizeof(conf), "%s/config", dir);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(defaults_without_anything, setup),
		cmocka_unit_test_setup(environment_first, setup),
		cmocka_unit_test_setup(profiles_from_the_files, setup),
		cmocka_unit_test_setup(s3_urls_path_style, setup),
		cmocka_unit_test_setup(open_refuses_a_bad_url_alone, setup),
		cmocka_unit_test_setup(specs_keep_their_urls, setup),
		cmocka_unit_test_setup(presigned_urls_shown_without_query, setup),
		cmocka_unit_test_setup(listings_parsed_and_asked_for, setup),
		cmocka_unit_test_setup(settings_win_and_pick_addressing, setup),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	unlink(creds);
	unlink(conf);
	rmdir(dir);
	return rc;
}
