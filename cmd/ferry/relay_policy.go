package main

import (
	"bufio"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/ferry-sync/ferry/evolu/relay"
)

// quotaPolicy is a --quota-file: a default and per-owner quotas in bytes
// (0: unlimited).
type quotaPolicy struct {
	def    int64
	owners map[relay.OwnerID]int64
}

func (q quotaPolicy) of(o relay.OwnerID) int64 {
	if n, ok := q.owners[o]; ok {
		return n
	}
	return q.def
}

// policyLines calls fn with the fields of each line of path that is not
// blank or a # comment, and its number; fn's error is reported with the
// line.
func policyLines(path string, fn func(fields []string) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("cannot read %s: %w", path, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if err := fn(fields); err != nil {
			return fmt.Errorf("%s:%d: %w", path, n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("cannot read %s: %w", path, err)
	}
	return nil
}

// loadQuotaFile reads lines "OWNER_ID BYTES" and "* BYTES" (the default).
func loadQuotaFile(path string) (quotaPolicy, error) {
	q := quotaPolicy{owners: map[relay.OwnerID]int64{}}
	err := policyLines(path, func(f []string) error {
		if len(f) != 2 {
			return fmt.Errorf(`want "OWNER_ID BYTES" or "* BYTES"`)
		}
		n, err := parseBytes(f[1])
		if err != nil {
			return err
		}
		if f[0] == "*" {
			q.def = n
			return nil
		}
		o, err := relay.ParseOwnerID(f[0])
		if err != nil {
			return fmt.Errorf("%q is not an OwnerId", f[0])
		}
		q.owners[o] = n
		return nil
	})
	return q, err
}

// parseBytes reads a byte count with an optional k, M or G suffix
// (powers of 1000).
func parseBytes(s string) (int64, error) {
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "k"):
		mult, s = 1_000, strings.TrimSuffix(s, "k")
	case strings.HasSuffix(s, "M"):
		mult, s = 1_000_000, strings.TrimSuffix(s, "M")
	case strings.HasSuffix(s, "G"):
		mult, s = 1_000_000_000, strings.TrimSuffix(s, "G")
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("%q is not a byte count (like 5000000, 5M or 1G)", s)
	}
	return n * mult, nil
}

// loadOwnerList reads one OwnerId a line.
func loadOwnerList(path string) (map[relay.OwnerID]bool, error) {
	out := map[relay.OwnerID]bool{}
	err := policyLines(path, func(f []string) error {
		if len(f) != 1 {
			return fmt.Errorf("want one OwnerId a line")
		}
		o, err := relay.ParseOwnerID(f[0])
		if err != nil {
			return fmt.Errorf("%q is not an OwnerId", f[0])
		}
		out[o] = true
		return nil
	})
	return out, err
}

// redactDSN hides a password in a postgres:// URL.
func redactDSN(db string) string {
	u, err := url.Parse(db)
	if err != nil || u.User == nil {
		return db
	}
	return u.Redacted()
}
