// compat.cpp: symbols of Debian's libibverbs that no verbs program calls on the emulator but
// that libraries loaded beside it reference at load time (libfabric's librdmacm and libefa
// are bound with BIND_NOW, so every symbol they name must exist or the process does not
// start). The sysfs helpers work; the kernel-ABI copies and rdma-core's private provider
// interface refuse: no kernel device and no provider driver ever exists under the emulator
// (libefa's registration at load time is accepted and ignored).
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

#define EMU_EXPORT extern "C" __attribute__((visibility("default")))

EMU_EXPORT const char* ibv_get_sysfs_path(void) { return "/sys"; }

EMU_EXPORT int ibv_read_sysfs_file(const char* dir, const char* file, char* buf, size_t size) {
  char path[4096];
  if (std::snprintf(path, sizeof path, "%s/%s", dir, file) >= static_cast<int>(sizeof path)) return -1;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, size);
  close(fd);
  if (n > 0 && static_cast<size_t>(n) < size && buf[n - 1] == '\n') buf[--n] = '\0';
  if (n >= 0 && static_cast<size_t>(n) < size) buf[n] = '\0';
  return static_cast<int>(n);
}

// Kernel-format conversions used by librdmacm, which cannot open rdma_cm here: zero the target.
EMU_EXPORT void ibv_copy_ah_attr_from_kern(void* dst, const void*) { std::memset(dst, 0, 32); }
EMU_EXPORT void ibv_copy_qp_attr_from_kern(void* dst, const void*) { std::memset(dst, 0, 144); }
EMU_EXPORT void ibv_copy_path_rec_from_kern(void* dst, const void*) { std::memset(dst, 0, 64); }

// rdma-core's private provider ABI (IBVERBS_PRIVATE_34): nothing here ever succeeds.
EMU_EXPORT void verbs_register_driver_34(const void*) {}
EMU_EXPORT void __verbs_log(const void*, const char*, ...) {}
EMU_EXPORT void* _verbs_init_and_alloc_context(void*, int, size_t, void*, unsigned) {
  errno = EOPNOTSUPP;
  return nullptr;
}
EMU_EXPORT void verbs_set_ops(void*, const void*) {}
EMU_EXPORT void verbs_uninit_context(void*) {}
#define EMU_REFUSE(name) EMU_EXPORT int name(void) { return EOPNOTSUPP; }
EMU_REFUSE(execute_ioctl)
EMU_REFUSE(ibv_cmd_alloc_pd)
EMU_REFUSE(ibv_cmd_create_ah)
EMU_REFUSE(ibv_cmd_create_cq_ex)
EMU_REFUSE(ibv_cmd_create_qp_ex)
EMU_REFUSE(ibv_cmd_dealloc_pd)
EMU_REFUSE(ibv_cmd_dereg_mr)
EMU_REFUSE(ibv_cmd_destroy_ah)
EMU_REFUSE(ibv_cmd_destroy_cq)
EMU_REFUSE(ibv_cmd_destroy_qp)
EMU_REFUSE(ibv_cmd_get_context)
EMU_REFUSE(ibv_cmd_modify_qp)
EMU_REFUSE(ibv_cmd_query_device_any)
EMU_REFUSE(ibv_cmd_query_port)
EMU_REFUSE(ibv_cmd_query_qp)
EMU_REFUSE(ibv_cmd_reg_dmabuf_mr)
EMU_REFUSE(ibv_cmd_reg_mr)
