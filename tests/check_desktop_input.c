/* check_desktop_input.c - computer use as xdotool commands
 * (engine/desktop-input.h): every action and the argument vector it
 * makes, every kind of bad line with its number, texts that look like
 * options or commands, the limits; and the window list and pointer
 * parsers fed what a hostile box could print. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check-tap.h"
#include "common/buf.h"
#include "common/error.h"
#include "common/util.h"
#include "engine/desktop-input.h"

#define W 1280
#define H 800

/* The vector for text as one string, arguments joined by single spaces
 * (none of the expected ones holds a space). */
static char *joined(char **argv)
{
	_cleanup_pd_buf_ struct pd_buf b = {0};

	for (char **p = argv; *p; p++)
		ck_assert_int_eq(pd_buf_printf(&b, "%s%s", p == argv ? "" : " ", *p), 0);
	return pd_buf_take(&b, NULL);
}

static void expect(const char *text, const char *want)
{
	_cleanup_strv_free_ char **argv = NULL;
	_cleanup_free_ char *got = NULL;
	pd_error err = {0};
	int r;

	r = eng_desktop_input_parse(text, strlen(text), W, H, &argv, &err);
	ck_assert_msg(r == 0, "'%s': %d %s", text, r, err.msg);
	got = joined(argv);
	ck_assert_msg(strcmp(got, want) == 0, "'%s':\n got '%s'\nwant '%s'", text, got, want);
}

/* text is refused: -EINVAL with exactly message `want`, no vector. */
static void refused(const char *text, size_t len, const char *want)
{
	char **argv = (char **)0x1;
	pd_error err = {0};

	ck_assert_int_eq(eng_desktop_input_parse(text, len, W, H, &argv, &err), -EINVAL);
	ck_assert_ptr_eq(argv, (char **)0x1);
	ck_assert_int_eq(err.code, -EINVAL);
	ck_assert_msg(strcmp(err.msg, want) == 0, "got '%s'\nwant '%s'", err.msg, want);
}

static void refused_str(const char *text, const char *want)
{
	refused(text, strlen(text), want);
}

START_TEST(test_move)
{
	expect("move 10 20", "xdotool mousemove 10 20");
	expect("move 0 0\n", "xdotool mousemove 0 0");
	expect("move 1279 799", "xdotool mousemove 1279 799");
	/* Any blanks between words, leading and trailing ones. */
	expect("  move\t 3   4 \t", "xdotool mousemove 3 4");
	expect("move 007 08", "xdotool mousemove 7 8");
}
END_TEST

START_TEST(test_click)
{
	expect("click", "xdotool click 1");
	expect("click left", "xdotool click 1");
	expect("click middle", "xdotool click 2");
	expect("click right", "xdotool click 3");
	expect("click 5 6", "xdotool mousemove 5 6 click 1");
	expect("click right 100 200", "xdotool mousemove 100 200 click 3");
}
END_TEST

START_TEST(test_double_drag_scroll)
{
	expect("double", "xdotool click --repeat 2 1");
	expect("double 1 2", "xdotool mousemove 1 2 click --repeat 2 1");
	expect("drag 1 2 300 400", "xdotool mousemove 1 2 mousedown 1 mousemove 300 400 mouseup 1");
	expect("scroll up 3", "xdotool click --delay 50 --repeat 3 4");
	expect("scroll down 1", "xdotool click --delay 50 --repeat 1 5");
	expect("scroll down 100", "xdotool click --delay 50 --repeat 100 5");
}
END_TEST

START_TEST(test_type)
{
	expect("type hi", "xdotool key --delay 12 -- U0068 U0069");
	/* Exactly one separator: the rest is the text, spaces included. */
	expect("type  a ", "xdotool key --delay 12 -- U0020 U0061 U0020");
	expect("type\tx", "xdotool key --delay 12 -- U0078");
	expect("type a\tb", "xdotool key --delay 12 -- U0061 Tab U0062");
	expect("type é日😀", "xdotool key --delay 12 -- U00E9 U65E5 U1F600");
	/* The "\r" of a CRLF line end is not typed. */
	expect("type ab\r\n", "xdotool key --delay 12 -- U0061 U0062");
}
END_TEST

START_TEST(test_key)
{
	expect("key Return", "xdotool key -- Return");
	expect("key ctrl+s", "xdotool key -- ctrl+s");
	expect("key ctrl+alt+t", "xdotool key -- ctrl+alt+t");
	expect("key shift+Tab", "xdotool key -- shift+Tab");
	expect("key Control+Shift+Win+META+Alt+F5", "xdotool key -- ctrl+shift+super+meta+alt+F5");
	expect("key super+a", "xdotool key -- super+a");
	expect("key KP_Enter", "xdotool key -- KP_Enter");
	/* One printable character: its keysym. */
	expect("key ctrl+/", "xdotool key -- ctrl+U002F");
	expect("key +", "xdotool key -- U002B");
	expect("key ctrl++", "xdotool key -- ctrl+U002B");
	expect("key -", "xdotool key -- U002D");
	expect("key é", "xdotool key -- U00E9");
	expect("key alt+1", "xdotool key -- alt+1");
}
END_TEST

/* Lines chain into one vector, in order; blank lines and CRLF. */
START_TEST(test_chain)
{
	expect("move 1 2\n\nclick\r\n   \r\nkey ctrl+l\ntype ok\nkey Return\n",
	       "xdotool mousemove 1 2 click 1 key -- ctrl+l key --delay 12 -- U006F U006B "
	       "key -- Return");
}
END_TEST

/* The bad lines: each on line 3 after two good ones; nothing comes out. */
static const struct {
	const char *line;
	const char *says;
} bad_lines[] = {
    {"jump 1 2", "unknown action 'jump' (move, click, double, drag, scroll, type, key)"},
    {"Move 1 2", "unknown action 'Move' (move, click, double, drag, scroll, type, key)"},
    {"typex", "unknown action 'typex' (move, click, double, drag, scroll, type, key)"},
    {"move", "usage: move X Y"},
    {"move 1", "usage: move X Y"},
    {"move 1 2 3", "usage: move X Y"},
    {"move 1280 0", "X 1280 is off the screen (0 to 1279)"},
    {"move 0 800", "Y 800 is off the screen (0 to 799)"},
    {"move -1 0", "X '-1' is not a coordinate (a decimal number from 0 to 1279)"},
    {"move +1 0", "X '+1' is not a coordinate (a decimal number from 0 to 1279)"},
    {"move 0x10 0", "X '0x10' is not a coordinate (a decimal number from 0 to 1279)"},
    {"move 1.5 0", "X '1.5' is not a coordinate (a decimal number from 0 to 1279)"},
    {"move 0000001 0", "X '0000001' is not a coordinate (a decimal number from 0 to 1279)"},
    {"move 99999999999999999999 0",
     "X '99999999999999999999' is not a coordinate (a decimal number from 0 to 1279)"},
    {"click 1", "usage: click [left|middle|right] [X Y]"},
    {"click left 1", "usage: click [left|middle|right] [X Y]"},
    {"click up", "unknown button 'up' (left, middle, right)"},
    {"click Left", "unknown button 'Left' (left, middle, right)"},
    {"click right 1 2 3", "usage: click [left|middle|right] [X Y]"},
    {"double 1", "usage: double [X Y]"},
    {"double left", "usage: double [X Y]"},
    {"drag 1 2 3", "usage: drag X1 Y1 X2 Y2"},
    {"drag 1 2 3 4 5", "too many words"},
    {"drag 1 2 3 900", "Y 900 is off the screen (0 to 799)"},
    {"scroll", "usage: scroll up|down N"},
    {"scroll up", "usage: scroll up|down N"},
    {"scroll left 1", "scroll goes up or down, not 'left'"},
    {"scroll up 0", "0 steps: scroll takes 1 to 100"},
    {"scroll up 101", "101 steps: scroll takes 1 to 100"},
    {"scroll up 1000", "'1000' is not a number of steps (1 to 100)"},
    {"scroll up -1", "'-1' is not a number of steps (1 to 100)"},
    {"type", "usage: type TEXT (the text after one space)"},
    {"type ", "usage: type TEXT (the text after one space)"},
    {"type a\x01z", "the text has a control character (U+0001 at byte 2); use key for "
		    "Return and the like"},
    {"type \x7f", "the text has a control character (U+007F at byte 1); use key for Return "
		  "and the like"},
    {"type \xc2\x85", "the text has a control character (U+0085 at byte 1); use key for "
		      "Return and the like"},
    {"type a\rb", "the text has a control character (U+000D at byte 2); use key for Return "
		  "and the like"},
    {"type \xff", "the text is not UTF-8 (byte 0xff at byte 1)"},
    {"type a\xc3", "the text is not UTF-8 (byte 0xc3 at byte 2)"},
    {"type \xed\xa0\x80", "the text is not UTF-8 (byte 0xed at byte 1)"},
    {"type \xc0\xaf", "the text is not UTF-8 (byte 0xc0 at byte 1)"},
    {"key", "usage: key COMBO (such as ctrl+s, Return, shift+Tab)"},
    {"key ctrl+a b", "usage: key COMBO (such as ctrl+s, Return, shift+Tab)"},
    {"key hyper+a", "unknown modifier 'hyper' (ctrl, control, alt, shift, super, win, meta)"},
    {"key ctrl++a", "'ctrl++a' has an empty modifier"},
    {"key ctrl+", "'ctrl+' ends with '+' but names no key after it"},
    {"key ++", "'++' ends with '+' but names no key after it"},
    {"key +a", "'+a' starts with '+'"},
    {"key ab!", "'ab!' is not a key: a key name (letters, digits, _: Return, F5, a) or one "
		"printable character"},
    {"key \x7f", "'\\x7f' is not a key: a key name (letters, digits, _: Return, F5, a) or one "
		 "printable character"},
    {"key \xff", "'\\xff' is not a key: a key name (letters, digits, _: Return, F5, a) or one "
		 "printable character"},
    {"key aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "the key name is longer than 32 bytes"},
    /* xdotool's commands: `key` would stop at them and run them. */
    {"key exec", "'exec' is an xdotool command, not a key"},
    {"key Exec", "'Exec' is an xdotool command, not a key"},
    {"key MOUSEMOVE", "'MOUSEMOVE' is an xdotool command, not a key"},
    {"key type", "'type' is an xdotool command, not a key"},
    {"key sleep", "'sleep' is an xdotool command, not a key"},
    {"key windowkill", "'windowkill' is an xdotool command, not a key"},
    {"key search", "'search' is an xdotool command, not a key"},
};

START_TEST(test_bad_line)
{
	char text[256], want[PD_ERROR_MAX];

	snprintf(text, sizeof(text), "move 1 1\nclick\n%s\nclick\n", bad_lines[_i].line);
	snprintf(want, sizeof(want), "line 3: %s", bad_lines[_i].says);
	refused_str(text, want);
}
END_TEST

/* Line numbers count blank lines and CRLF ends; a NUL byte anywhere in a
 * line refuses it; no action at all is refused. */
START_TEST(test_line_numbers)
{
	refused_str("\n\nmove 1 1\r\n\r\n  \nwhat\n", "line 6: unknown action 'what' (move, click, "
						      "double, drag, scroll, type, key)");
	refused("click\nmove 1\0 2\n", 13, "line 2: a NUL byte");
	refused("type a\0b", 8, "line 1: a NUL byte");
	refused_str("", "no action (move, click, double, drag, scroll, type, key)");
	refused_str("\n \n\r\n", "no action (move, click, double, drag, scroll, type, key)");
	/* Only the first bad line is named. */
	refused_str("x\ny\n", "line 1: unknown action 'x' (move, click, double, drag, scroll, "
			      "type, key)");
}
END_TEST

/* A quoted word is printable and cut: a message is one line. */
START_TEST(test_quote_is_printable)
{
	char text[300], want[PD_ERROR_MAX];

	refused_str("\x1b[31m 1", "line 1: unknown action '\\x1b[31m' (move, click, double, drag, "
				  "scroll, type, key)");
	memset(text, 'z', 200);
	strcpy(text + 200, " 1");
	snprintf(want, sizeof(want),
		 "line 1: unknown action '%.40s' (move, click, double, drag, scroll, type, key)",
		 text);
	refused_str(text, want);
}
END_TEST

/* Every argument after "key --delay 12 --" up to the next command is a
 * keysym made here. */
static void all_keysyms(char **argv)
{
	size_t i = 0;

	while (argv[i] && strcmp(argv[i], "--") != 0)
		i++;
	ck_assert_ptr_nonnull(argv[i]);
	for (i++; argv[i]; i++) {
		const char *a = argv[i];
		size_t n = strlen(a);

		if (strcmp(a, "Tab") == 0)
			continue;
		ck_assert_msg(a[0] == 'U' && n >= 5 && n <= 7 &&
				  strspn(a + 1, "0123456789ABCDEF") == n - 1,
			      "argument '%s' is not a keysym", a);
	}
}

/* Texts that look like options, commands of the chain, windows: typed,
 * never read as such, and the actions after them still come. */
START_TEST(test_type_injection)
{
	static const char *const texts[] = {
	    "mousemove 0 0",
	    "-h",
	    "--window 0x1 key exec sh",
	    "--",
	    "-- exec /bin/sh -c id",
	    "exec",
	    "%@ %1",
	    "key ctrl+alt+Delete",
	    "\tsearch --name x windowkill",
	    "$(id) `id` ; | & > < * ? ~ \\ ' \"",
	};

	for (size_t i = 0; i < ELEMENTSOF(texts); i++) {
		_cleanup_strv_free_ char **argv = NULL;
		_cleanup_free_ char *text = NULL;
		pd_error err = {0};
		size_t n = 0, len;

		ck_assert_int_gt(asprintf(&text, "type %s\nmove 9 9", texts[i]), 0);
		ck_assert_int_eq(eng_desktop_input_parse(text, strlen(text), W, H, &argv, &err), 0);
		while (argv[n])
			n++;
		/* Ends with the move, after exactly one keysym a character. */
		ck_assert_uint_ge(n, 8);
		ck_assert_str_eq(argv[n - 3], "mousemove");
		ck_assert_str_eq(argv[n - 2], "9");
		ck_assert_str_eq(argv[n - 1], "9");
		len = strlen(texts[i]);
		ck_assert_uint_eq(n - 3 - 5, len);
		ck_assert_str_eq(argv[1], "key");
		ck_assert_str_eq(argv[4], "--");
		{
			/* Checked above; before it, keysyms only. */
			char *move = argv[n - 3];

			argv[n - 3] = NULL;
			all_keysyms(argv);
			argv[n - 3] = move;
		}
	}
}
END_TEST

START_TEST(test_limits_lines)
{
	_cleanup_pd_buf_ struct pd_buf b = {0};
	_cleanup_strv_free_ char **argv = NULL;
	pd_error err = {0};

	for (int i = 0; i < DESKTOP_INPUT_LINES_MAX; i++)
		ck_assert_int_eq(pd_buf_printf(&b, "click\n"), 0);
	ck_assert_int_eq(eng_desktop_input_parse(b.data, b.len, W, H, &argv, &err), 0);
	/* 1000 lines and no final newline, or a final one: the same. */
	ck_assert_int_eq(pd_buf_printf(&b, "click"), 0);
	refused(b.data, b.len, "line 1001: more than 1000 lines in one write");
	/* Even blank: a line is a line. */
	b.len -= 5;
	ck_assert_int_eq(pd_buf_printf(&b, "\n"), 0);
	refused(b.data, b.len, "line 1001: more than 1000 lines in one write");
}
END_TEST

START_TEST(test_limits_type)
{
	_cleanup_pd_buf_ struct pd_buf b = {0};
	char text[DESKTOP_TYPE_MAX + 2];
	pd_error err = {0};

	memset(text, 'a', sizeof(text) - 1);
	text[DESKTOP_TYPE_MAX] = '\0';
	/* 4096 bytes on each of 4 lines: 16 KiB, taken. */
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(pd_buf_printf(&b, "type %s\n", text), 0);
	{
		_cleanup_strv_free_ char **argv = NULL;
		size_t n = 0;

		ck_assert_int_eq(eng_desktop_input_parse(b.data, b.len, W, H, &argv, &err), 0);
		while (argv[n])
			n++;
		ck_assert_uint_eq(n, 1 + 4 * (4 + DESKTOP_TYPE_MAX));
	}
	/* One more byte in all: the fifth line is named. */
	ck_assert_int_eq(pd_buf_printf(&b, "type b\n"), 0);
	refused(b.data, b.len, "line 5: the texts of one write pass 16384 bytes");
	/* 4097 bytes on one line. */
	text[DESKTOP_TYPE_MAX] = 'a';
	text[DESKTOP_TYPE_MAX + 1] = '\0';
	pd_buf_free(&b);
	ck_assert_int_eq(pd_buf_printf(&b, "click\ntype %s", text), 0);
	refused(b.data, b.len, "line 2: the text is 4097 bytes, more than 4096");
	/* 4096 bytes of 4-byte characters: 1024 keysyms. */
	pd_buf_free(&b);
	ck_assert_int_eq(pd_buf_printf(&b, "type "), 0);
	for (int i = 0; i < DESKTOP_TYPE_MAX / 4; i++)
		ck_assert_int_eq(pd_buf_printf(&b, "😀"), 0);
	{
		_cleanup_strv_free_ char **argv = NULL;
		size_t n = 0;

		ck_assert_int_eq(eng_desktop_input_parse(b.data, b.len, W, H, &argv, &err), 0);
		while (argv[n])
			n++;
		ck_assert_uint_eq(n, 5 + DESKTOP_TYPE_MAX / 4);
	}
}
END_TEST

/* The screen given is the bound; a screen of no size takes nothing. */
START_TEST(test_screen_bound)
{
	_cleanup_strv_free_ char **argv = NULL;
	char **none = NULL;
	pd_error err = {0};

	ck_assert_int_eq(eng_desktop_input_parse("move 3839 2159", 14, 3840, 2160, &argv, &err), 0);
	ck_assert_int_eq(eng_desktop_input_parse("move 640 0", 10, 640, 480, &none, &err), -EINVAL);
	ck_assert_str_eq(err.msg, "line 1: X 640 is off the screen (0 to 639)");
	ck_assert_int_eq(eng_desktop_input_parse("click", 5, 0, 480, &none, &err), -EINVAL);
	ck_assert_ptr_null(none);
}
END_TEST

/* --- desktop/windows --- */

/* "ID HEX" of the bytes of s (n of them): one line of the script. */
static void window_line(struct pd_buf *b, const char *id, const char *s, size_t n)
{
	ck_assert_int_eq(pd_buf_printf(b, "%s ", id), 0);
	for (size_t i = 0; i < n; i++)
		ck_assert_int_eq(pd_buf_printf(b, "%02x", (unsigned char)s[i]), 0);
	ck_assert_int_eq(pd_buf_printf(b, "\n"), 0);
}

/* A string literal and its length (NULs inside included). */
#define T(s) s, sizeof(s) - 1

static void window(struct pd_buf *b, unsigned long id, long x, long y, long w, long h,
		   const char *title, size_t tlen)
{
	_cleanup_pd_buf_ struct pd_buf raw = {0};
	char ids[32];

	snprintf(ids, sizeof(ids), "%lu", id);
	ck_assert_int_eq(
	    pd_buf_printf(&raw, "WINDOW=%lu\nX=%ld\nY=%ld\nWIDTH=%ld\nHEIGHT=%ld\nSCREEN=0\n", id,
			  x, y, w, h),
	    0);
	ck_assert_int_eq(pd_buf_append(&raw, title, tlen), 0);
	ck_assert_int_eq(pd_buf_append(&raw, "\n", 1), 0);
	window_line(b, ids, raw.data, raw.len);
}

static char *windows_text(const struct pd_buf *b)
{
	char *text = NULL;
	pd_error err = {0};

	ck_assert_int_eq(eng_desktop_windows_format(b->data ? b->data : "", b->len, &text, &err),
			 0);
	return text;
}

/* What the script printed on an XFCE desktop (a terminal, the desktop, a
 * panel). */
START_TEST(test_windows_real)
{
	static const char out[] =
	    "18874408 57494e444f573d31383837343430380a583d300a593d300a57494454483d313238300a48454"
	    "94748543d3830300a53435245454e3d300a4465736b746f700a\n"
	    "29360131 57494e444f573d32393336303133310a583d31300a593d38350a57494454483d3831370a48"
	    "45494748543d3438330a53435245454e3d300a7064207465726d0a\n"
	    "14680067 57494e444f573d31343638303036370a583d300a593d300a57494454483d313238300a4845"
	    "494748543d32370a53435245454e3d300a78666365342d70616e656c0a\n";
	_cleanup_free_ char *text = NULL;
	pd_error err = {0};

	ck_assert_int_eq(eng_desktop_windows_format(out, sizeof(out) - 1, &text, &err), 0);
	ck_assert_str_eq(text, "0x1200028 1280x800+0+0 Desktop\n"
			       "0x1c00003 817x483+10+85 pd term\n"
			       "0xe00003 1280x27+0+0 xfce4-panel\n");
}
END_TEST

/* Titles are the window owner's: newlines, fake lines, escapes, control
 * bytes, NULs, bytes that are not UTF-8 all stay inside one line. */
START_TEST(test_windows_hostile_titles)
{
	_cleanup_pd_buf_ struct pd_buf b = {0};
	_cleanup_free_ char *text = NULL;

	window(&b, 1, 0, 0, 10, 10, T("a\n0x2 1x1+0+0 forged"));
	window(&b, 3, 0, 0, 10, 10, T("tab\there\\x41 \x1b[2J"));
	window(&b, 4, 0, 0, 10, 10, T("nul\0byte \xff\xfe é"));
	window(&b, 5, -5, -3, 10, 10, T("partly off"));
	window(&b, 6, 0, 0, 10, 10, T(""));
	text = windows_text(&b);
	ck_assert_str_eq(text, "0x1 10x10+0+0 a\\x0a0x2 1x1+0+0 forged\n"
			       "0x3 10x10+0+0 tab\\x09here\\x5cx41 \\x1b[2J\n"
			       "0x4 10x10+0+0 nul\\x00byte \\xff\\xfe é\n"
			       "0x5 10x10-5-3 partly off\n"
			       "0x6 10x10+0+0 \n");
}
END_TEST

/* Lines that are not what the script prints are skipped, whatever they
 * hold; the good ones around them stay. */
START_TEST(test_windows_malformed)
{
	_cleanup_pd_buf_ struct pd_buf b = {0};
	_cleanup_free_ char *text = NULL;
	static const char *const junk[] = {
	    "",
	    " ",
	    "garbage",
	    "12",
	    "12 ",
	    "x12 00",
	    "0 57",
	    "4294967296 00",
	    "99999999999999999999 00",
	    "12 5",
	    "12 zz",
	    "12 57494e444f573d31320a", /* WINDOW=12 and nothing else */
	    "12 0x57",
	    "12 57 49",
	    "12 5749 4e44",
	};

	window(&b, 7, 1, 2, 3, 4, T("first"));
	for (size_t i = 0; i < ELEMENTSOF(junk); i++)
		ck_assert_int_eq(pd_buf_printf(&b, "%s\n", junk[i]), 0);
	/* WINDOW= that is not the line's id. */
	{
		_cleanup_pd_buf_ struct pd_buf other = {0};
		window(&other, 9, 0, 0, 5, 5, "liar", 4);
		memcpy(other.data, "8", 1);
		ck_assert_int_eq(pd_buf_append(&b, other.data, other.len), 0);
	}
	/* Fields missing, out of order, signed where they may not be. */
	window_line(&b, "10", T("WINDOW=10\nY=0\nX=0\nWIDTH=1\nHEIGHT=1\nSCREEN=0\nt\n"));
	window_line(&b, "11", T("WINDOW=11\nX=0\nY=0\nWIDTH=-1\nHEIGHT=1\nSCREEN=0\nt\n"));
	window_line(&b, "12", T("WINDOW=12\nX=0\nY=0\nWIDTH=1\nHEIGHT=1\nt\n"));
	window_line(&b, "13", T("WINDOW=13\nX=0\nY=0\nWIDTH=1\nHEIGHT=1\nSCREEN=0"));
	window_line(&b, "14", T("WINDOW=14\nX=1e3\nY=0\nWIDTH=1\nHEIGHT=1\nSCREEN=0\nt\n"));
	window_line(&b, "15", T("WINDOW=15\nX=0\nY=0\nWIDTH=9999999\nHEIGHT=1\nSCREEN=0\nt\n"));
	window_line(&b, "16", T("WINDOW=16\nX=-\nY=0\nWIDTH=1\nHEIGHT=1\nSCREEN=0\nt\n"));
	/* Nothing on the screen: parked far off, empty. */
	window(&b, 17, -1000, -1000, 5, 5, T("Xfwm4"));
	window(&b, 18, 0, -27, 1280, 27, T("above"));
	window(&b, 19, 0, 0, 0, 10, T("thin"));
	window(&b, 20, 8, 9, 10, 11, T("last"));
	text = windows_text(&b);
	ck_assert_str_eq(text, "0x7 3x4+1+2 first\n0x14 10x11+8+9 last\n");
}
END_TEST

/* A NUL in the output, a last line without its newline, no output. */
START_TEST(test_windows_edges)
{
	_cleanup_pd_buf_ struct pd_buf b = {0};
	_cleanup_free_ char *text = NULL, *none = NULL;
	pd_error err = {0};

	ck_assert_int_eq(eng_desktop_windows_format("", 0, &none, &err), 0);
	ck_assert_str_eq(none, "");
	window(&b, 1, 0, 0, 1, 1, T("a"));
	b.data[3] = '\0'; /* inside the hex of line 1 */
	window(&b, 2, 0, 0, 1, 1, T("b"));
	b.len--; /* no final newline */
	text = windows_text(&b);
	ck_assert_str_eq(text, "0x2 1x1+0+0 b\n");
}
END_TEST

/* A title longer than the cap is cut; a huge line costs nothing more. */
START_TEST(test_windows_long_title)
{
	_cleanup_pd_buf_ struct pd_buf b = {0};
	_cleanup_free_ char *text = NULL, *big = malloc(1 << 20);
	size_t prefix = strlen("0x1 1x1+0+0 ");

	memset(big, 'x', 1 << 20);
	window(&b, 1, 0, 0, 1, 1, big, 1 << 20);
	text = windows_text(&b);
	ck_assert_uint_eq(strlen(text), prefix + DESKTOP_TITLE_MAX + 1);
	ck_assert(strncmp(text, "0x1 1x1+0+0 xxx", 15) == 0);
	/* A cut inside a character: what is left of it is escaped. */
	pd_buf_free(&b);
	free(text);
	memset(big, 'y', DESKTOP_TITLE_MAX - 1);
	memcpy(big + DESKTOP_TITLE_MAX - 1, "é", 2);
	window(&b, 1, 0, 0, 1, 1, big, DESKTOP_TITLE_MAX + 1);
	text = windows_text(&b);
	ck_assert_uint_eq(strlen(text), prefix + DESKTOP_TITLE_MAX - 1 + 4 + 1);
	ck_assert_str_eq(text + strlen(text) - 5, "\\xc3\n");
}
END_TEST

START_TEST(test_windows_cap)
{
	_cleanup_pd_buf_ struct pd_buf b = {0};
	_cleanup_free_ char *text = NULL;
	size_t lines = 0;

	for (unsigned long i = 1; i <= DESKTOP_WINDOWS_MAX + 50; i++)
		window(&b, i, 0, 0, 1, 1, "w", 1);
	text = windows_text(&b);
	for (const char *p = text; *p; p++)
		lines += *p == '\n';
	ck_assert_uint_eq(lines, DESKTOP_WINDOWS_MAX);
}
END_TEST

/* The command: a fixed script, the same vector every time. */
START_TEST(test_windows_argv)
{
	char **a = eng_desktop_windows_argv();

	ck_assert_ptr_eq(a, eng_desktop_windows_argv());
	ck_assert_str_eq(a[0], "/bin/sh");
	ck_assert_str_eq(a[1], "-c");
	ck_assert_ptr_nonnull(strstr(a[2], "od -An -v -tx1"));
	ck_assert_ptr_null(a[3]);
	a = eng_desktop_cursor_argv();
	ck_assert_str_eq(a[0], "xdotool");
	ck_assert_str_eq(a[1], "getmouselocation");
	ck_assert_str_eq(a[2], "--shell");
	ck_assert_ptr_null(a[3]);
}
END_TEST

/* --- desktop/cursor --- */

START_TEST(test_cursor)
{
	static const struct {
		const char *out;
		const char *want; /* NULL: refused */
	} cases[] = {
	    {"X=160\nY=100\nSCREEN=0\nWINDOW=1306\n", "160 100\n"},
	    {"X=0\nY=0\n", "0 0\n"},
	    {"X=65535\nY=65535\n", "65535 65535\n"},
	    {"X=65536\nY=0\n", NULL},
	    {"X=-1\nY=0\n", NULL},
	    {"X=1\n", NULL},
	    {"Y=1\nX=1\n", NULL},
	    {"X=1\nY=2", NULL},
	    {"X=1 \nY=2\n", NULL},
	    {"X=\nY=2\n", NULL},
	    {"x:1 y:2 screen:0 window:3\n", NULL},
	    {"", NULL},
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		char *text = NULL;
		pd_error err = {0};
		int r = eng_desktop_cursor_format(cases[i].out, strlen(cases[i].out), &text, &err);

		if (cases[i].want) {
			ck_assert_msg(r == 0, "'%s': %s", cases[i].out, err.msg);
			ck_assert_str_eq(text, cases[i].want);
		} else {
			ck_assert_msg(r == -EIO, "'%s' taken", cases[i].out);
			ck_assert_ptr_null(text);
			ck_assert_ptr_nonnull(strstr(err.msg, "xdotool getmouselocation"));
		}
		free(text);
	}
}
END_TEST

START_TEST(test_cursor_huge)
{
	_cleanup_free_ char *big = malloc(1 << 20);
	char *text = NULL;
	pd_error err = {0};

	memset(big, '1', 1 << 20);
	memcpy(big, "X=1\nY=2\n", 8);
	ck_assert_int_eq(eng_desktop_cursor_format(big, 1 << 20, &text, &err), -EIO);
	ck_assert_ptr_null(text);
}
END_TEST

static Suite *desktop_input_suite(void)
{
	Suite *s = suite_create("desktop_input");
	TCase *tc = tcase_create("actions");
	TCase *bad = tcase_create("errors");
	TCase *lim = tcase_create("limits");
	TCase *win = tcase_create("windows");

	tcase_add_test(tc, test_move);
	tcase_add_test(tc, test_click);
	tcase_add_test(tc, test_double_drag_scroll);
	tcase_add_test(tc, test_type);
	tcase_add_test(tc, test_key);
	tcase_add_test(tc, test_chain);
	suite_add_tcase(s, tc);
	tcase_add_loop_test(bad, test_bad_line, 0, ELEMENTSOF(bad_lines));
	tcase_add_test(bad, test_line_numbers);
	tcase_add_test(bad, test_quote_is_printable);
	tcase_add_test(bad, test_type_injection);
	suite_add_tcase(s, bad);
	tcase_add_test(lim, test_limits_lines);
	tcase_add_test(lim, test_limits_type);
	tcase_add_test(lim, test_screen_bound);
	suite_add_tcase(s, lim);
	tcase_add_test(win, test_windows_real);
	tcase_add_test(win, test_windows_hostile_titles);
	tcase_add_test(win, test_windows_malformed);
	tcase_add_test(win, test_windows_edges);
	tcase_add_test(win, test_windows_long_title);
	tcase_add_test(win, test_windows_cap);
	tcase_add_test(win, test_windows_argv);
	tcase_add_test(win, test_cursor);
	tcase_add_test(win, test_cursor_huge);
	suite_add_tcase(s, win);
	return s;
}

int main(void)
{
	return check_tap_run(desktop_input_suite());
}
