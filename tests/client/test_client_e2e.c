/*
 * test_client_e2e.c - libtdbclient against a real tdbd (placeholder: the
 * end-to-end suite lands with the daemon; skipped until then).
 */
int main(void)
{
	return 77;
}
