package manager

import (
	"testing"
	"testing/fstest"
)

func TestCgroupMemoryLimit(t *testing.T) {
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s + "\n")} }
	for _, tt := range []struct {
		name string
		fs   fstest.MapFS
		self string
		want uint64
	}{
		{"v1, the process's own cgroup", fstest.MapFS{
			"memory/memory.limit_in_bytes":        file("9223372036854771712"),
			"memory/pod/op/memory.limit_in_bytes": file("134217728"),
			"memory/pod/memory.limit_in_bytes":    file("268435456"),
			"unified/cgroup.controllers":          file(""),
		}, "4:memory:/pod/op\n1:cpu:/\n0::/\n", 134217728},
		{"v1 in a container: the mount's root is the cgroup", fstest.MapFS{
			"memory/memory.limit_in_bytes": file("134217728"),
		}, "12:cpu,cpuacct:/x\n4:memory:/runc/op\n", 134217728},
		{"v1, an ancestor's limit is lower", fstest.MapFS{
			"memory/pod/memory.limit_in_bytes":    file("67108864"),
			"memory/pod/op/memory.limit_in_bytes": file("134217728"),
		}, "4:memory:/pod/op\n", 67108864},
		{"v1 without a limit", fstest.MapFS{
			"memory/memory.limit_in_bytes": file("9223372036854771712"),
		}, "4:memory:/\n", 0},
		{"v2", fstest.MapFS{
			"memory.max":             file("max"),
			"kubepods/op/memory.max": file("134217728"),
		}, "0::/kubepods/op\n", 134217728},
		{"v2 in a cgroup namespace", fstest.MapFS{
			"memory.max": file("134217728"),
		}, "0::/\n", 134217728},
		{"v2 without a limit", fstest.MapFS{
			"memory.max": file("max"),
		}, "0::/\n", 0},
		{"no cgroup", fstest.MapFS{}, "", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := cgroupMemoryLimit(tt.fs, tt.self)
			if err != nil || got != tt.want {
				t.Errorf("cgroupMemoryLimit = %d, %v; want %d", got, err, tt.want)
			}
		})
	}
}

func TestCgroupMemoryLimitUnreadable(t *testing.T) {
	_, err := cgroupMemoryLimit(fstest.MapFS{"memory.max": &fstest.MapFile{Data: []byte("lots\n")}}, "0::/\n")
	if err == nil {
		t.Error("cgroupMemoryLimit of memory.max 'lots' = nil error")
	}
}
