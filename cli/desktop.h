/* desktop.h - `paddock desktop` and `paddock screenshot`: a box's
 * graphical desktop through its desktop/ files and screenshot.png. */
#pragma once

#include "cli/cli.h"
#include "cli/client.h"

/* How long `desktop BOX` waits for the desktop to answer after turning it
 * on (its X server's first answer comes within seconds; a loaded machine
 * can take longer). */
#define CLI_DESKTOP_WAIT_S 120

/* Runs `desktop BOX …` (a->desktop_sub) on the resolved box name; prints
 * its result on stdout (a->json: JSON). Returns 0 or -errno with the
 * server's reason in err. */
int cli_desktop(cli_client *c, const cli_args *a, const char *box, pd_error *err);

/* Runs `screenshot BOX [-o FILE]`: GET boxes/BOX/screenshot.png into FILE
 * (or "BOX-YYYYMMDD-HHMMSS.png" in the current directory, or inside
 * FILE when it is a directory) through a temporary file beside it,
 * renamed into place only once the whole PNG arrived and its header was
 * checked; prints the path (a->json: an object with path, width, height,
 * bytes). "-o -" writes the PNG to stdout, which must not be a terminal.
 * Nothing is left behind on failure or on SIGINT/SIGTERM/SIGHUP. */
int cli_screenshot(cli_client *c, const cli_args *a, const char *box, pd_error *err);
