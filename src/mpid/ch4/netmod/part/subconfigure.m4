[#] start of __file__
dnl Configure fragment of the ch4 partitioned-communication component (src/mpid/ch4/netmod/part).
dnl It is built whenever the device is ch4 (it is not a --with-device netmod); the
dnl RDMA transport's backends are chosen with --enable-part-ofi[=yes|no|auto] (libfabric,
dnl found through MPICH's own --with-libfabric probe in src/mpid/ch4/subconfigure.m4) and
dnl --enable-part-verbs[=yes|no|auto] (libibverbs).
dnl MPICH_SUBCFG_AFTER=src/mpid/ch4

AC_DEFUN([PAC_SUBCFG_PREREQ_]PAC_SUBCFG_AUTO_SUFFIX,[
    AC_ARG_ENABLE([part-verbs],
        [AS_HELP_STRING([--enable-part-verbs@<:@=yes|no|auto@:>@],
            [Native InfiniBand verbs RDMA path for partitioned communication.
             auto (default): built when libibverbs is found; yes: configure fails without it])],
        [], [enable_part_verbs=auto])
    PAC_SET_HEADER_LIB_PATH([ibverbs])
    AC_ARG_ENABLE([part-ofi],
        [AS_HELP_STRING([--enable-part-ofi@<:@=yes|no|auto@:>@],
            [RDMA transport of partitioned communication over libfabric (fi_writedata), in
             ch4:ucx and ch4:ofi builds. auto (default): built when an external libfabric is
             found (--with-libfabric=PATH); yes: configure fails without it])],
        [], [enable_part_ofi=auto])

    build_ch4_part=no
    part_verbs=no
    part_ofi=no
    AM_COND_IF([BUILD_CH4],[
        build_ch4_part=yes
        AS_CASE([$enable_part_ofi],
            [yes|no|auto],[],
            [AC_MSG_ERROR([--enable-part-ofi takes yes, no or auto, not '$enable_part_ofi'])])
        dnl pac_have_libfabric comes from the ch4 device's probe (its PREREQ runs first);
        dnl the embedded libfabric is not usable here: it is built after this check
        if test "$enable_part_ofi" != "no" ; then
            if test "$pac_have_libfabric" = "yes" -a "$with_libfabric" != "embedded" ; then
                PAC_CHECK_HEADER_LIB([rdma/fi_rma.h],[fabric],[fi_getinfo],
                                     [part_ofi=yes],[part_ofi=no])
            fi
            if test "$enable_part_ofi" = "yes" -a "$part_ofi" = "no" ; then
                AC_MSG_ERROR([--enable-part-ofi=yes, but an external libfabric was not found (header rdma/fi_rma.h and library -lfabric; on Debian: apt-get install libfabric-dev, or give --with-libfabric=PATH)])
            fi
        fi
        AS_CASE([$enable_part_verbs],
            [yes|no|auto],[],
            [AC_MSG_ERROR([--enable-part-verbs takes yes, no or auto, not '$enable_part_verbs'])])
        if test "$enable_part_verbs" != "no" ; then
            PAC_CHECK_HEADER_LIB([infiniband/verbs.h],[ibverbs],[ibv_open_device],
                                 [part_verbs=yes],[part_verbs=no])
            if test "$enable_part_verbs" = "yes" -a "$part_verbs" = "no" ; then
                AC_MSG_ERROR([--enable-part-verbs=yes, but libibverbs was not found (header infiniband/verbs.h and library -libverbs; on Debian: apt-get install libibverbs-dev, or give --with-ibverbs=PATH)])
            fi
        fi
        dnl every decision of this fragment is made by now (the body below only acts on
        dnl it); said here, early in configure, so that maint/configure-checks.sh can stop
        dnl configure at this line instead of after MPICH's subconfigures (~10x sooner)
        AC_MSG_NOTICE([ch4 partitioned engine's RDMA backends decided (ofi: $part_ofi, verbs: $part_verbs)])
    ])
    AM_CONDITIONAL([BUILD_CH4_PART],[test "$build_ch4_part" = "yes"])
    AM_CONDITIONAL([BUILD_CH4_PART_VERBS],[test "$part_verbs" = "yes"])
    AM_CONDITIONAL([BUILD_CH4_PART_OFI],[test "$part_ofi" = "yes"])
    AM_CONDITIONAL([BUILD_CH4_PART_RDMA],[test "$part_ofi" = "yes" -o "$part_verbs" = "yes"])
])dnl

AC_DEFUN([PAC_SUBCFG_BODY_]PAC_SUBCFG_AUTO_SUFFIX,[
AM_COND_IF([BUILD_CH4_PART],[
    AC_MSG_NOTICE([RUNNING CONFIGURE FOR ch4 partitioned engine (ofi: $part_ofi, verbs: $part_verbs)])
    AC_DEFINE([MPIDI_CH4_PART_ENGINE],[1],[Define if the ch4 partitioned engine is built])
    part_transports="tag"
    if test "$part_ofi" = "yes" ; then
        AC_DEFINE([MPIDI_CH4_PART_OFI],[1],[Define if the partitioned engine's RDMA transport over libfabric is built])
        dnl not linked: part_ofi.c opens libfabric with dlopen when the transport is first
        dnl used (linked, Debian's libfabric costs every process 0.2 s at start); a libfabric
        dnl given by --with-libfabric-lib=DIR or --with-libfabric=PATH is tried first from
        dnl DIR or PATH/lib (static links on a glibc before 2.34 need -ldl: LIBS has it)
        AC_SEARCH_LIBS([dlopen],[dl])
        part_libfabric_dir=""
        AS_CASE([$with_libfabric],
            [""|yes|no|embedded],[],
            [part_libfabric_dir="$with_libfabric/lib"])
        AS_CASE([$with_libfabric_lib],
            [""|yes|no],[],
            [part_libfabric_dir="$with_libfabric_lib"])
        if test -n "$part_libfabric_dir" ; then
            AC_DEFINE_UNQUOTED([MPIDI_PART_LIBFABRIC_DIR],["$part_libfabric_dir"],
                [Where configure was told libfabric is (--with-libfabric-lib=DIR or --with-libfabric=PATH: PATH/lib)])
        fi
        part_transports="$part_transports, rdma over libfabric"
    fi
    if test "$part_verbs" = "yes" ; then
        AC_DEFINE([MPIDI_CH4_PART_VERBS],[1],[Define if the partitioned engine's RDMA transport over InfiniBand verbs is built])
        PAC_LIBS_ADD([-libverbs])
        part_transports="$part_transports, rdma over verbs"
    fi
    part_engine_string="ch4 partitioned engine (transports: $part_transports)"
    AC_DEFINE_UNQUOTED([MPIDI_CH4_PART_DESC],["$part_engine_string"],[What the partitioned engine was built with])
    if test -n "$MPICH_CUSTOM_STRING" ; then
        MPICH_CUSTOM_STRING="$MPICH_CUSTOM_STRING; $part_engine_string"
    else
        MPICH_CUSTOM_STRING="$part_engine_string"
    fi
    AC_CONFIG_COMMANDS([part-summary],
        [echo "*** partitioned engine: built (transports: $part_transports; --enable-part-ofi=$enable_part_ofi, --enable-part-verbs=$enable_part_verbs)"],
        [part_verbs=$part_verbs enable_part_verbs=$enable_part_verbs part_transports="$part_transports" enable_part_ofi=$enable_part_ofi])
])
])dnl
[#] end of __file__
