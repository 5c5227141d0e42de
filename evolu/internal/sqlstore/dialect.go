package sqlstore

import (
	"strconv"
	"strings"
)

// rebind turns the store's SQLite placeholders (? and ?N) into Postgres
// ones ($N) when the store is in Postgres; the queries hold no '?' in
// literals. A bare ? numbers one past the greatest number so far, as in
// SQLite.
func (s *Store) rebind(q string) string {
	if !s.pg {
		return q
	}
	var b strings.Builder
	b.Grow(len(q) + 16)
	top := 0
	for i := 0; i < len(q); i++ {
		if q[i] != '?' {
			b.WriteByte(q[i])
			continue
		}
		j := i + 1
		for j < len(q) && q[j] >= '0' && q[j] <= '9' {
			j++
		}
		n := top + 1
		if j > i+1 {
			n, _ = strconv.Atoi(q[i+1 : j])
		}
		top = max(top, n)
		b.WriteString("$" + strconv.Itoa(n))
		i = j - 1
	}
	return b.String()
}
