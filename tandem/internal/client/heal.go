package client

// liveWrites lists, by channel and record, the write IDs of the live record
// messages on the hub, for healing (§12.2). Healing runs after every pull
// over every write the device keeps, so it keeps each message's own list
// of IDs (nothing copied) and compares a record's few writes with its few
// messages directly; only a record with many writes on the hub gets a set.
type liveWrites map[liveKey][][][32]byte

type liveKey struct {
	channel string
	rec     [16]byte
}

// add records a live message of rec in channel holding the writes ids.
func (l liveWrites) add(channel string, rec [16]byte, ids [][32]byte) {
	k := liveKey{channel, rec}
	l[k] = append(l[k], ids)
}

// linearMax is how many write IDs a record may have on the hub before
// holds builds a set rather than scanning the lists for each kept write.
const linearMax = 64

// holds reports whether every write ID of kept (record.State.KeptIDs) is in
// a live message of rec in channel.
func (l liveWrites) holds(channel string, rec [16]byte, kept [][32]byte) bool {
	lists := l[liveKey{channel, rec}]
	total := 0
	for _, ids := range lists {
		total += len(ids)
	}
	if total > linearMax {
		set := make(map[[32]byte]struct{}, total)
		for _, ids := range lists {
			for _, id := range ids {
				set[id] = struct{}{}
			}
		}
		for _, id := range kept {
			if _, ok := set[id]; !ok {
				return false
			}
		}
		return true
	}
	for _, id := range kept {
		if !listed(lists, id) {
			return false
		}
	}
	return true
}

func listed(lists [][][32]byte, id [32]byte) bool {
	for _, ids := range lists {
		for i := range ids {
			// The first byte tells nearly all IDs apart without a call.
			if ids[i][0] == id[0] && ids[i] == id {
				return true
			}
		}
	}
	return false
}
