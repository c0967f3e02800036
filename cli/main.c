/* main.c - the `paddock` command: parses the command line and runs it
 * (cli.h). cli_platform_init() first, so that a closed pipe is an error
 * return (see transfer.h), never a silent death. */
#include <stdio.h>
#include <string.h>

#include <curl/curl.h>

#include "cli/cli.h"
#include "cli/doctor.h"
#include "cli/platform.h"

int main(int argc, char **argv)
{
	cli_args a;
	pd_error err = {0};
	int rc;

	cli_platform_init();
	if (argc > 1 && strcmp(argv[1], "doctor") == 0) /* the server's own checks */
		return cli_doctor(argc - 1, argv + 1);
	if (cli_parse(argc, argv, &a, &err) < 0) {
		fprintf(stderr, "paddock: %s\nTry 'paddock --help'.\n", err.msg);
		return CLI_EXIT_USAGE;
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0) {
		fprintf(stderr, "paddock: cannot initialize libcurl\n");
		cli_args_release(&a);
		return 1;
	}
	rc = cli_run(&a);
	cli_args_release(&a);
	curl_global_cleanup();
	return rc;
}
