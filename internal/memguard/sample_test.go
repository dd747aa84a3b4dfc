package memguard

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestFileBytes(t *testing.T) {
	status := "Name:\tsample\nVmRSS:\t  60000 kB\nRssAnon:\t   30000 kB\nRssFile:\t   27000 kB\nRssShmem:\t       8 kB\n"
	got, err := fileBytes([]byte(status))
	if err != nil || got != 27008<<10 {
		t.Errorf("fileBytes = %d, %v; want %d", got, err, 27008<<10)
	}
	if _, err := fileBytes([]byte("Name:\tx\n")); err == nil {
		t.Error("fileBytes of a status without RssFile = nil error")
	}
}

// This process's own reading: the test binary's pages are resident, and
// the collector has run (the runtime adds up its CPU classes when a
// collection ends).
func TestReaderReadsThisProcess(t *testing.T) {
	runtime.GC()
	var r Reader
	s, err := r.Read()
	if err != nil {
		t.Fatal(err)
	}
	if s.FileBytes <= 0 || s.UsedSeconds <= 0 || s.GCSeconds < 0 || s.GCSeconds > s.UsedSeconds {
		t.Errorf("Read = %+v: want resident file pages, CPU used and the collector's part of it", s)
	}
	gogc := debug.SetGCPercent(100)
	debug.SetGCPercent(gogc)
	if s.HeapGoalBytes <= s.LiveHeapBytes || s.GOGC != int64(gogc) {
		t.Errorf("Read = %+v: want a heap goal past the live heap and GOGC %d", s, gogc)
	}
}

// What the cgroup holds beyond the Go runtime is its charge less the
// runtime's memory where that is known and more, else the resident file
// pages.
func TestOutside(t *testing.T) {
	for _, tt := range []struct {
		s    Sample
		want int64
	}{
		{Sample{FileBytes: 20}, 20},
		{Sample{FileBytes: 20, ChargedBytes: 100, GoBytes: 70}, 30},
		{Sample{FileBytes: 20, ChargedBytes: 80, GoBytes: 70}, 20},
	} {
		if got := tt.s.outside(); got != tt.want {
			t.Errorf("%+v.outside() = %d, want %d", tt.s, got, tt.want)
		}
	}
}
