/*
 * kfd-ioctl-probe: minimal AMDKFD_IOC_GET_VERSION client.
 *
 * Built with `gcc -static` by vm/vmlane.py and installed in the VM image as
 * /usr/local/bin/kfd-ioctl-probe.  It has no dependencies and runs unchanged
 * in the VM lanes and on any x86-64 host.
 *
 * Usage: kfd-ioctl-probe [DEVICE]        (default /dev/kfd)
 *
 * Exit codes:
 *   0  the ioctl worked and printed "KFD ioctl interface version X.Y"
 *   1  usage error
 *   2  stat() failed (node missing)
 *   3  open(O_RDWR) failed (EACCES: not in the node's group, ...)
 *   4  the ioctl failed
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* include/uapi/linux/kfd_ioctl.h */
struct kfd_ioctl_get_version_args {
	uint32_t major_version; /* from KFD */
	uint32_t minor_version; /* from KFD */
};

#define AMDKFD_IOCTL_BASE 'K'
#define AMDKFD_IOC_GET_VERSION \
	_IOR(AMDKFD_IOCTL_BASE, 0x01, struct kfd_ioctl_get_version_args)

_Static_assert(AMDKFD_IOC_GET_VERSION == 0x80084B01UL,
	       "AMDKFD_IOC_GET_VERSION must be 0x80084B01 on x86-64");

static void mode_string(mode_t mode, char out[11])
{
	const char *rwx = "rwxrwxrwx";
	out[0] = S_ISCHR(mode) ? 'c' : S_ISBLK(mode) ? 'b' : S_ISDIR(mode) ? 'd' :
		 S_ISLNK(mode) ? 'l' : S_ISREG(mode) ? '-' : '?';
	for (int i = 0; i < 9; i++)
		out[i + 1] = (mode & (0400 >> i)) ? rwx[i] : '-';
	out[10] = '\0';
}

int main(int argc, char **argv)
{
	const char *path = "/dev/kfd";
	struct stat st;
	struct kfd_ioctl_get_version_args args;
	char mode[11];
	int fd;

	if (argc > 2 || (argc == 2 && argv[1][0] == '-')) {
		fprintf(stderr, "usage: %s [DEVICE]\n", argv[0]);
		return 1;
	}
	if (argc == 2)
		path = argv[1];

	if (stat(path, &st) != 0) {
		fprintf(stderr, "stat %s: %s (errno %d)\n", path, strerror(errno), errno);
		return 2;
	}
	mode_string(st.st_mode, mode);
	printf("%s: mode %s (%04o) uid %u gid %u dev %u:%u%s\n", path, mode,
	       (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid, (unsigned)st.st_gid,
	       major(st.st_rdev), minor(st.st_rdev),
	       S_ISCHR(st.st_mode) ? "" : " (not a character device)");
	printf("ioctl nr = 0x%08lx\n", (unsigned long)AMDKFD_IOC_GET_VERSION);
	fflush(stdout);

	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "open %s: %s (errno %d)\n", path, strerror(errno), errno);
		return 3;
	}
	memset(&args, 0, sizeof(args));
	if (ioctl(fd, AMDKFD_IOC_GET_VERSION, &args) != 0) {
		fprintf(stderr, "ioctl AMDKFD_IOC_GET_VERSION: %s (errno %d)\n", strerror(errno),
			errno);
		close(fd);
		return 4;
	}
	close(fd);
	printf("KFD ioctl interface version %u.%u\n", args.major_version, args.minor_version);
	return 0;
}
