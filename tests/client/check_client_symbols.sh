#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# check_client_symbols.sh LIB - libtdbclient exports the public API and
# nothing else: every defined dynamic symbol is tdbc_<name> (no tdbc__
# internals, no tdb_ring_*/tdb_proto_* of the code linked in, which would
# clash with Samba's libtdb), and the API's entry points are all there.
set -eu
lib=$1
syms=$(nm -D --defined-only "$lib" | awk '$2 != "A" { print $3 }' | sed 's/@.*//')
bad=$(printf '%s\n' "$syms" | grep -v '^tdbc_[a-z]' || true)
if [ -n "$bad" ]; then
	echo "exported symbols outside tdbc_*:" >&2
	printf '%s\n' "$bad" >&2
	exit 1
fi
for f in tdbc_connect tdbc_close tdbc_socket_path tdbc_errmsg tdbc_strerror \
	 tdbc_uses_rings tdbc_table_opts_init tdbc_table_create \
	 tdbc_table_drop tdbc_table_stat tdbc_table_list tdbc_table_open \
	 tdbc_table_close tdbc_table_name tdbc_put tdbc_del tdbc_get \
	 tdbc_get_alloc tdbc_txn_begin tdbc_txn_commit tdbc_txn_abort \
	 tdbc_scan_open tdbc_scan_next tdbc_scan_close tdbc_watch \
	 tdbc_watch_next tdbc_watch_close tdbc_stats tdbc_submit tdbc_reap \
	 tdbc_inflight tdbc_put_if tdbc_del_if tdbc_get_ver tdbc_incr \
	 tdbc_get_ref_ver tdbc_txn_run tdbc_scan_next_ver; do
	if ! printf '%s\n' "$syms" | grep -qx "$f"; then
		echo "missing export: $f" >&2
		exit 1
	fi
done
# Expiry (issue 27): its calls in TDBCLIENT_1.1, and the calls whose
# structs grew in both nodes: the default one new programs bind to and
# TDBCLIENT_1's for old programs (src/client/compat.c)
vsyms=$(nm -D --defined-only "$lib" | awk '$2 != "A" { print $3 }')
for f in tdbc_put_ttl tdbc_put_at tdbc_get_ex tdbc_expire tdbc_expire_at \
	 tdbc_persist tdbc_ttl tdbc_scan_next_ex; do
	if ! printf '%s\n' "$vsyms" | grep -qx "$f@@TDBCLIENT_1.1"; then
		echo "missing export: $f@@TDBCLIENT_1.1" >&2
		exit 1
	fi
done
for f in tdbc_watch_next tdbc_stats; do
	for v in "$f@@TDBCLIENT_1.1" "$f@TDBCLIENT_1"; do
		if ! printf '%s\n' "$vsyms" | grep -qx "$v"; then
			echo "missing export: $v" >&2
			exit 1
		fi
	done
done
# Ordered tables (issue 28): the range calls in TDBCLIENT_1.2, and the
# calls whose structs gained flags in all three nodes
for f in tdbc_scan_range tdbc_scan_submit_range tdbc_map_range \
	 tdbc_scan_range_txn; do
	if ! printf '%s\n' "$vsyms" | grep -qx "$f@@TDBCLIENT_1.2"; then
		echo "missing export: $f@@TDBCLIENT_1.2" >&2
		exit 1
	fi
done
for f in tdbc_table_opts_init tdbc_table_create tdbc_table_stat; do
	for v in "$f@@TDBCLIENT_1.2" "$f@TDBCLIENT_1.1" "$f@TDBCLIENT_1"; do
		if ! printf '%s\n' "$vsyms" | grep -qx "$v"; then
			echo "missing export: $v" >&2
			exit 1
		fi
	done
done
n=$(printf '%s\n' "$syms" | wc -l)
echo "ok: $n symbols, all tdbc_*"
