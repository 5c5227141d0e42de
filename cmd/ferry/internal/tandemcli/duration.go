package tandemcli

import (
	"errors"
	"strconv"
	"strings"
	"time"
)

// durationValue is a flag's duration that also takes days: "7d", "1d12h",
// besides Go's "90m", "1h30m" (issue 24: the help speaks of days).
type durationValue struct{ d *time.Duration }

func (v durationValue) Type() string { return "duration" }

func (v durationValue) String() string {
	if v.d == nil {
		return "0s"
	}
	return v.d.String()
}

func (v durationValue) Set(s string) error {
	d, err := parseDuration(s)
	if err != nil {
		return err
	}
	*v.d = d
	return nil
}

// parseDuration reads a duration with an optional leading count of days.
func parseDuration(s string) (time.Duration, error) {
	days, rest, ok := strings.Cut(s, "d")
	if !ok {
		return time.ParseDuration(s)
	}
	n, err := strconv.Atoi(days)
	if err != nil || n < 0 || n > 3650 {
		return 0, errors.New("bad number of days")
	}
	d := time.Duration(n) * 24 * time.Hour
	if rest != "" {
		r, err := time.ParseDuration(rest)
		if err != nil || r < 0 {
			return 0, errors.New("bad duration after the days")
		}
		d += r
	}
	return d, nil
}
