/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * smallfs.h - a small tmpfs for the disk-full cases of test_wal.c and
 * test_ckpt.c.  Include after <cmocka.h>: failures are cmocka asserts.
 */
#ifndef TDB_TEST_SMALLFS_H
#define TDB_TEST_SMALLFS_H

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

/* Make dir/mnt and mount a tmpfs of `size` bytes (a mount option such
 * as "64k") there.  false, with a message, when this machine cannot
 * (not root, no mount permission): the caller skips. */
static bool smallfs_mount(const char *dir, const char *size, char *mnt,
			  size_t mntlen)
{
	char opts[64];

	if (geteuid()) {
		print_message("skipped: mounting a small tmpfs needs root\n");
		return false;
	}
	snprintf(mnt, mntlen, "%s/mnt", dir);
	snprintf(opts, sizeof(opts), "size=%s,mode=0755", size);
	assert_int_equal(mkdir(mnt, 0755), 0);
	if (mount("tmpfs", mnt, "tmpfs", 0, opts)) {
		print_message("skipped: cannot mount a tmpfs: %s\n",
			      strerror(errno));
		return false;
	}
	return true;
}

/* Append to path until its filesystem is full: not a byte more fits. */
static void smallfs_fill(const char *path)
{
	static unsigned char z[4096];
	size_t chunk = sizeof(z);
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);

	assert_true(fd >= 0);
	while (chunk) {
		ssize_t n = write(fd, z, chunk);

		if (n > 0)
			continue;
		assert_int_equal(n, -1);
		assert_int_equal(errno, ENOSPC);
		chunk /= 2;
	}
	close(fd);
}

#endif
