package membership

import (
	"hash/fnv"
	"slices"
	"sort"
)

// fmix64 is murmur3's 64-bit finaliser. Rendezvous hashing fed raw FNV-1a
// scores assigns slots badly unevenly (SHARDING.md); mixing every bit of
// the input into every bit of the output fixes that.
func fmix64(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// pair is a member's score for a slot; member indexes the sorted members.
type pair struct {
	score  uint64
	slot   int
	member int
}

// score is member identity's rendezvous weight for slot.
func score(identity string, slot int) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(identity))
	return fmix64(h.Sum64() ^ fmix64(uint64(slot)+1))
}

// Assign maps each slot 0..slots-1 to one of members by rendezvous
// (highest random weight) hashing with bounded load: pairs are taken in
// descending score and a member takes floor(slots/len(members)) slots,
// or one more while fewer than slots%len(members) members have one more. The result depends only on the set of members, not their order,
// so every member computing it from the same view agrees; a member joining
// or leaving moves about slots/len(members) slots. It returns nil when
// members is empty.
func Assign(members []string, slots int) []string {
	if len(members) == 0 || slots <= 0 {
		return nil
	}
	ms := slices.Clone(members)
	slices.Sort(ms)
	ms = slices.Compact(ms)
	pairs := make([]pair, 0, slots*len(ms))
	for s := range slots {
		for i, m := range ms {
			pairs = append(pairs, pair{score(m, s), s, i})
		}
	}
	// Ties break to the lower identity, then the lower slot, so the
	// order is total and every member computes the same result.
	sort.Slice(pairs, func(i, j int) bool {
		a, b := pairs[i], pairs[j]
		if a.score != b.score {
			return a.score > b.score
		}
		if a.member != b.member {
			return a.member < b.member
		}
		return a.slot < b.slot
	})
	return greedy(pairs, ms, slots)
}

// greedy gives each pair's slot to its member, best pair first, unless the
// slot is taken or the member full.
func greedy(pairs []pair, ms []string, slots int) []string {
	base, extra := slots/len(ms), slots%len(ms)
	owner := make([]string, slots)
	load := make([]int, len(ms))
	left := slots
	for _, p := range pairs {
		if owner[p.slot] != "" || load[p.member] > base || (load[p.member] == base && extra == 0) {
			continue
		}
		if load[p.member] == base {
			extra--
		}
		owner[p.slot] = ms[p.member]
		load[p.member]++
		if left--; left == 0 {
			break
		}
	}
	return owner
}
