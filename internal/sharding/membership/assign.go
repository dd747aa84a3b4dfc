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

// Assign maps each slot 0..slots-1 to one of members, balanced (each
// member gets floor(slots/len(members)) slots, or one more) and sticky:
// current[s] is the member whose claim alone holds slot s ("" when no
// member's claim does, or several do, as mid-move), and each member keeps
// its current slots up to its share, the ones it scores highest for. The
// slots left over go by rendezvous (highest random weight) hashing to
// the members under their share: pairs are taken in descending score,
// best first. So a member joining takes only its share, ⌈slots/N⌉ at
// most, from those over theirs, and a member leaving moves only its own
// slots; and the assignment from a move's intermediate claims is the one
// the move heads for. Which members get the one more is a hash of their
// identities alone, not their claims, so that it holds mid-move too.
//
// The result depends only on the set of members and current, not on the
// members' order, so every member computing it from the same view
// agrees. It returns nil when members is empty.
func Assign(members []string, slots int, current []string) []string {
	if len(members) == 0 || slots <= 0 {
		return nil
	}
	ms := slices.Clone(members)
	slices.Sort(ms)
	ms = slices.Compact(ms)
	index := make(map[string]int, len(ms))
	for i, m := range ms {
		index[m] = i
	}
	room := shares(ms, slots)

	owner := make([]string, slots)
	if len(current) == slots {
		keep := make([][]int, len(ms)) // each member's current slots
		for s, m := range current {
			if i, ok := index[m]; ok {
				keep[i] = append(keep[i], s)
			}
		}
		for i, ss := range keep {
			sort.Slice(ss, func(a, b int) bool {
				return score(ms[i], ss[a]) > score(ms[i], ss[b]) || (score(ms[i], ss[a]) == score(ms[i], ss[b]) && ss[a] < ss[b])
			})
			for _, s := range ss[:min(len(ss), room[i])] {
				owner[s] = ms[i]
				room[i]--
			}
		}
	}

	var pairs []pair
	for s := range slots {
		if owner[s] != "" {
			continue
		}
		for i, m := range ms {
			if room[i] > 0 {
				pairs = append(pairs, pair{score(m, s), s, i})
			}
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
	for _, p := range pairs {
		if owner[p.slot] == "" && room[p.member] > 0 {
			owner[p.slot] = ms[p.member]
			room[p.member]--
		}
	}
	return owner
}

// shares returns each of the sorted members' share of slots:
// floor(slots/len(ms)), and one more for the slots%len(ms) members whose
// identities hash highest.
func shares(ms []string, slots int) []int {
	room := make([]int, len(ms))
	for i := range room {
		room[i] = slots / len(ms)
	}
	byHash := make([]int, len(ms))
	for i := range byHash {
		byHash[i] = i
	}
	sort.Slice(byHash, func(a, b int) bool {
		ha, hb := score(ms[byHash[a]], -1), score(ms[byHash[b]], -1)
		return ha > hb || (ha == hb && byHash[a] < byHash[b])
	})
	for _, i := range byHash[:slots%len(ms)] {
		room[i]++
	}
	return room
}
