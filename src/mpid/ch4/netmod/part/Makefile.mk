## Build rules of the ch4 partitioned-communication component and of its MPI-facing layer
## (src/mpi/part). Included from src/mpid/ch4/netmod/Makefile.mk (maint/patches/0003).

if BUILD_CH4_PART

AM_CPPFLAGS += -I$(top_srcdir)/src/mpid/ch4/netmod/part

noinst_HEADERS += src/mpid/ch4/netmod/part/part_ch4.h \
                  src/mpid/ch4/netmod/part/part_impl.h \
                  src/mpid/ch4/netmod/part/part_imm.h \
                  src/mpid/ch4/netmod/part/part_info.h \
                  src/mpid/ch4/netmod/part/part_plan.h \
                  src/mpid/ch4/netmod/part/part_ploggp.h \
                  src/mpid/ch4/netmod/part/part_loggp_fit.h \
                  src/mpid/ch4/netmod/part/part_rdma.h \
                  src/mpid/ch4/netmod/part/part_timer.h \
                  src/mpid/ch4/netmod/part/part_state.h \
                  src/mpid/ch4/netmod/part/part_tagspace.h \
                  src/mpid/ch4/netmod/part/part_wire.h

mpi_core_sources += src/mpid/ch4/netmod/part/part_init.c \
                    src/mpid/ch4/netmod/part/part_core.c \
                    src/mpid/ch4/netmod/part/part_error.c \
                    src/mpid/ch4/netmod/part/part_match.c \
                    src/mpid/ch4/netmod/part/part_state.c \
                    src/mpid/ch4/netmod/part/part_plan.c \
                    src/mpid/ch4/netmod/part/part_aggr.c \
                    src/mpid/ch4/netmod/part/part_ploggp.c \
                    src/mpid/ch4/netmod/part/part_loggp_fit.c \
                    src/mpid/ch4/netmod/part/part_calib.c \
                    src/mpid/ch4/netmod/part/part_timer.c \
                    src/mpid/ch4/netmod/part/part_tag.c \
                    src/mpid/ch4/netmod/part/part_tagspace.c \
                    src/mpid/ch4/netmod/part/part_vci.c \
                    src/mpi/part/part_mpit.c

if BUILD_CH4_PART_RDMA
mpi_core_sources += src/mpid/ch4/netmod/part/part_rdma.c \
                    src/mpid/ch4/netmod/part/part_rdma_timer.c
endif BUILD_CH4_PART_RDMA

if BUILD_CH4_PART_OFI
mpi_core_sources += src/mpid/ch4/netmod/part/part_ofi.c
endif BUILD_CH4_PART_OFI

if BUILD_CH4_PART_VERBS
mpi_core_sources += src/mpid/ch4/netmod/part/part_verbs.c
endif BUILD_CH4_PART_VERBS

errnames_txt_files += src/mpid/ch4/netmod/part/errnames.txt

endif BUILD_CH4_PART
