/*
 * notify.c - tdbd's log lines and its messages to systemd.
 *
 * Log lines go to stderr, one write() each so threads do not interleave
 * them.  Under systemd (JOURNAL_STREAM set) each line starts with the
 * "<N>" priority prefix the journal understands; otherwise with "tdbd: ".
 * The level filter is the only state: an atomic int.  tdbd_esc() is the
 * one escape for client-supplied bytes in a log line (tdbd.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "tdbd.h"

static int log_level = L_INFO;

void tdbd_log_set_level(int level)
{
	__atomic_store_n(&log_level, level, __ATOMIC_RELAXED);
}

void tdbd_log(int level, const char *fmt, ...)
{
	static const char *const names[8] = {
		"emerg", "alert", "crit", "error", "warning", "notice",
		"info", "debug" };
	char line[1024];
	va_list ap;
	int n;

	if (level > __atomic_load_n(&log_level, __ATOMIC_RELAXED))
		return;
	if (getenv("JOURNAL_STREAM"))
		n = snprintf(line, sizeof(line), "<%d>", level);
	else
		n = snprintf(line, sizeof(line), "tdbd: %s: ",
			     names[level & 7]);
	va_start(ap, fmt);
	n += vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	if (write(STDERR_FILENO, line, (size_t)n) < 0)
		(void)0;        /* nowhere left to say it */
}

const char *tdbd_esc(char *out, size_t size, const void *p, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *b = p;
	size_t i, o = 0;

	for (i = 0; i < n; i++) {
		unsigned char c = b[i];
		size_t need = c == '\\' ? 2 : c >= 0x20 && c < 0x7f ? 1 : 4;

		if (o + need >= size)
			break;
		if (need == 1) {
			out[o++] = (char)c;
		} else if (need == 2) {
			out[o++] = '\\';
			out[o++] = '\\';
		} else {
			out[o++] = '\\';
			out[o++] = 'x';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	out[o] = '\0';
	return out;
}

struct tdbd_escaped tdbd_esc_name(const char *name)
{
	struct tdbd_escaped e;

	tdbd_esc(e.s, sizeof(e.s), name, strlen(name));
	return e;
}

void tdbd_notify(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (!getenv("NOTIFY_SOCKET"))
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	sd_notify(0, msg);
}
