/* repromatrix stand-in: symbols libtorchtrt.so needs and this torch lacks, each aborting
   the process loudly if it is ever called. The list comes from the compile command:
   -DSTANDIN_MISSING_SYMBOLS="MISSING(name) MISSING(other) ..." */
extern long write(int, const void *, unsigned long);

#define MISSING(name)                                                                      \
    void name(void) {                                                                      \
        static const char m[] = "repromatrix stand-in: " #name " was called (a symbol this " \
                                "torch lacks); aborting\n";                                \
        write(2, m, sizeof m - 1);                                                         \
        __builtin_trap();                                                                  \
    }

STANDIN_MISSING_SYMBOLS
