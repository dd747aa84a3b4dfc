package operators

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Act is one line of a --record-reconciles file (package internal/actlog).
type Act struct {
	Kind string // "start" or "end" of a reconcile, "write", or "own" or "disown" of a fleet's member
	At   int64  // unix nanoseconds
	What string // the key (namespace/name) of a start or end; "METHOD path" of a write; the member of an own or disown
	PID  int
}

// ParseAct parses one line: start|end|own|disown <unix-nanos> <key> <pid>,
// or write <unix-nanos> <METHOD> <path> <pid>.
func ParseAct(line string) (Act, error) {
	fs := strings.Fields(line)
	want := 4
	if len(fs) > 0 && fs[0] == "write" {
		want = 5
	}
	switch {
	case len(fs) == 0:
		return Act{}, fmt.Errorf("record line %q: empty", line)
	case !slices.Contains([]string{"start", "end", "write", "own", "disown"}, fs[0]):
		return Act{}, fmt.Errorf("record line %q: want start, end, write, own or disown", line)
	case len(fs) != want:
		return Act{}, fmt.Errorf("record line %q: want %d fields", line, want)
	}
	at, err1 := strconv.ParseInt(fs[1], 10, 64)
	pid, err2 := strconv.Atoi(fs[want-1])
	if err1 != nil || err2 != nil {
		return Act{}, fmt.Errorf("record line %q: bad number", line)
	}
	return Act{Kind: fs[0], At: at, What: strings.Join(fs[2:want-1], " "), PID: pid}, nil
}

// ReadActs reads every line of a record file whose writers have exited;
// a line it cannot parse is an error.
func ReadActs(path string) ([]Act, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Act
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		a, err := ParseAct(sc.Text())
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, sc.Err()
}

// LiveActs reads a record file that processes may still be writing: a
// line it cannot parse (the last, half written) is skipped.
func LiveActs(path string) ([]Act, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []Act
	for _, line := range strings.Split(string(b), "\n") {
		if a, err := ParseAct(line); err == nil {
			out = append(out, a)
		}
	}
	return out, nil
}
