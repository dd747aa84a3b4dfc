package main

import (
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A container's binary is read from its image by the container's own
// processes, so the page-cache pages of the binary they touch are charged
// to the container's memory cgroup and count against its limit. The
// benchmark's binaries were read first by the build or by earlier runs,
// whose cgroups keep the charge of every page still cached: so before
// each run the binary's pages are evicted, and the operator's page faults,
// inside its cgroup, read and charge again what it touches.
//
// Evicting rather than copying the binary into the cgroup: a copy's
// written pages would all be charged, the parts the process never maps as
// well, and count in the cgroup's peak before the operator even starts.

// evictPageCache drops the page-cache pages of the file at path, which no
// process may have mapped, and returns the bytes of it still cached.
func evictPageCache(path string) (resident int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	// Dirty pages (a binary just built) are not dropped: write them first.
	if err := f.Sync(); err != nil {
		return 0, fmt.Errorf("write %s back before evicting it: %w", path, err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return 0, fmt.Errorf("evict %s from the page cache: %w", path, err)
	}
	return residentBytes(f)
}

// residentBytes returns how many bytes of f are in the page cache.
func residentBytes(f *os.File) (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	if fi.Size() == 0 {
		return 0, nil
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return 0, fmt.Errorf("map %s: %w", f.Name(), err)
	}
	defer unix.Munmap(m)
	page := int64(os.Getpagesize())
	vec := make([]byte, (fi.Size()+page-1)/page)
	// x/sys/unix has no mincore for Linux.
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		return 0, fmt.Errorf("mincore %s: %w", f.Name(), errno)
	}
	var n int64
	for _, v := range vec {
		n += int64(v & 1)
	}
	return n * page, nil
}
