/* other.c: an unrelated object of the example project */
int other(void) { return 42; }
