"""The rules every view reads: what a record says about its bug (``verdict``), how versions
compare and which rule applies to them (``versions``), and which package a bug is about
(``versions.key_package``). Floor 0: pure, no I/O, imported by the store, report, check,
bisect and run alike, so one question gets one answer wherever it is asked."""
