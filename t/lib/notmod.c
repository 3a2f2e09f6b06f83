/*  notmod - a shared object that is not a Lux module: it loads, but
    registers no function and no entry point (built as
    t/lib/.libs/notmod.so for the tests of bad modules). */
int notmod_answer(void);

int
notmod_answer(void)
{
    return 42;
}
