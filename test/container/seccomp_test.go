package container

import "runtime"

// seccompProfile is the seccomp filter the container runs under, standing
// in for the Deployment's seccompProfile RuntimeDefault. RuntimeDefault is
// the container runtime's own profile (containerd's and Docker's are the
// same list): an allowlist of about 350 system calls that neither runc nor
// this module ships. This profile is its complement for a container with
// no capabilities: the calls RuntimeDefault refuses such a container
// (mounts, namespaces, modules, tracing, keyrings, clocks, reboot, BPF...)
// fail with EPERM, as they would under RuntimeDefault; the rest are
// allowed. Calls this kernel does not know are skipped by runc.
func seccompProfile() map[string]any {
	return map[string]any{
		"defaultAction": "SCMP_ACT_ALLOW",
		"architectures": seccompArchitectures(),
		"syscalls": []any{map[string]any{
			"action":   "SCMP_ACT_ERRNO",
			"errnoRet": 1, // EPERM
			"names": []string{
				"acct", "add_key", "bpf", "clock_adjtime", "clock_settime", "create_module",
				"delete_module", "finit_module", "fsconfig", "fsmount", "fsopen", "fspick",
				"get_kernel_syms", "get_mempolicy", "init_module", "ioperm", "iopl", "kcmp",
				"kexec_file_load", "kexec_load", "keyctl", "lookup_dcookie", "mbind", "mount",
				"mount_setattr", "move_mount", "move_pages", "name_to_handle_at", "nfsservctl",
				"open_by_handle_at", "open_tree", "perf_event_open", "pivot_root",
				"process_vm_readv", "process_vm_writev", "ptrace", "query_module", "quotactl",
				"quotactl_fd", "reboot", "request_key", "set_mempolicy", "setdomainname",
				"sethostname", "setns", "settimeofday", "stime", "swapoff", "swapon", "syslog",
				"sysfs", "_sysctl", "umount", "umount2", "unshare", "uselib", "userfaultfd",
				"ustat", "vhangup", "vm86", "vm86old",
			},
		}},
	}
}

// seccompArchitectures are the system call ABIs the filter applies to: all
// that this machine's processes can use, or a 32-bit call would go around
// it.
func seccompArchitectures() []string {
	switch runtime.GOARCH {
	case "amd64":
		return []string{"SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"}
	case "arm64":
		return []string{"SCMP_ARCH_AARCH64", "SCMP_ARCH_ARM"}
	}
	return nil // the native one only
}
