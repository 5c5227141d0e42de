package tandem

import (
	"bytes"
	"context"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/tandem/internal/record"
	"github.com/ferry-sync/ferry/tandem/internal/roster"
)

// TestRotationCrashChild is the child of TestRotationCrashMatrix: it opens
// the owner's device and gives the collection a new key, killing itself
// with SIGKILL when the rotation reaches the chosen point for the n-th
// time.
func TestRotationCrashChild(t *testing.T) {
	dir, at := os.Getenv("FERRY_ROT_DIR"), os.Getenv("FERRY_ROT_KILL")
	if dir == "" {
		t.Skip("only run as TestRotationCrashMatrix's child")
	}
	point, n, _ := strings.Cut(at, ":")
	left, _ := strconv.Atoi(n)
	d, err := Open(context.Background(), dir, Options{Logger: quiet()})
	if err != nil {
		fmt.Println("open-error", err)
		os.Exit(3)
	}
	d.eng.SetStepHook(func(p string) {
		if p == point {
			if left--; left <= 0 {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := d.NewKey(ctx, d.Collections()[0]); err != nil {
		fmt.Println("rotate-error", err)
		os.Exit(3)
	}
	fmt.Println("finished without a kill")
	os.Exit(4)
}

// TestRotationCrashMatrix: a child performing a rotation is killed with
// SIGKILL at each step boundary and inside the uploads, five times each,
// against real Dovecot; after a restart the owner's device finishes the
// same change, every member ends on the same roster and key, and the
// collection never dies of a crash.
func TestRotationCrashMatrix(t *testing.T) {
	h := dovecotHub(t, "felix")
	dir := t.TempDir()
	owner := openT(t, filepath.Join(dir, "owner"), Options{Name: "Jesper", Hub: h})
	c, _ := owner.NewCollection("Crashy")
	for i := 0; i < 60; i++ {
		owner.NewRecord(c, map[string][]byte{"title": []byte(fmt.Sprint("item ", i))})
	}
	syncT(t, owner)
	member := openT(t, filepath.Join(dir, "member"), Options{Name: "Aimee", Hub: h})
	defer member.Close()
	qr, err := owner.Invite(c, InviteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	syncT(t, owner)
	if _, err := member.Join(t.Context(), qr.Payload, "Aimee"); err != nil {
		t.Fatal(err)
	}
	syncT(t, member)
	syncT(t, owner)
	syncT(t, member)
	if membershipT(t, member, c) != MembershipActive {
		t.Fatal("setup: the member did not get in")
	}
	owner.Close()

	points := []string{"prepared", "upload", "uploaded", "announce", "announced", "granted", "retired"}
	rng := mrand.New(mrand.NewPCG(3, 4))
	trials := 5
	if testing.Short() {
		trials = 1
	}
	for _, p := range points {
		for trial := 0; trial < trials; trial++ {
			n := 1
			if p == "upload" {
				n = 1 + rng.IntN(60)
			}
			killAt(t, filepath.Join(dir, "owner"), fmt.Sprintf("%s:%d", p, n))
			o := openT(t, filepath.Join(dir, "owner"), Options{})
			for i := 0; i < 3 && o.eng.Rotating([16]byte(c)); i++ {
				syncT(t, o)
			}
			if o.eng.Rotating([16]byte(c)) {
				t.Fatalf("%s:%d: the rotation did not finish after the restart", p, n)
			}
			syncT(t, member)
			syncT(t, member)
			if st, _ := member.CollectionState(c); st != StateFollowing {
				t.Fatalf("%s:%d: the member's collection is %s", p, n, st)
			}
			if st, _ := o.CollectionState(c); st != StateFollowing {
				t.Fatalf("%s:%d: the owner's collection is %s", p, n, st)
			}
			if a, b := headOf(t, o, c), headOf(t, member, c); a != b {
				t.Fatalf("%s:%d: owner and member follow different rosters", p, n)
			}
			if a, b := o.eng.CurrentTag([16]byte(c)), member.eng.CurrentTag([16]byte(c)); a == "" || a != b {
				t.Fatalf("%s:%d: owner and member use different keys (%q, %q)", p, n, a, b)
			}
			if !bytes.Equal(stateOf(t, o, c), stateOf(t, member, c)) {
				t.Fatalf("%s:%d: states differ", p, n)
			}
			o.Close()
		}
	}
}

func killAt(t *testing.T, dir, point string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestRotationCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "FERRY_ROT_DIR="+dir, "FERRY_ROT_KILL="+point)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != -1 {
		t.Fatalf("child at %s was not killed: %v\n%s", point, err, out)
	}
}

func headOf(t *testing.T, d *Device, c CollectionID) [32]byte {
	var h [32]byte
	d.eng.View([16]byte(c), func(_ *record.State, r *roster.Roster, _ roster.Status) {
		if r != nil {
			h = r.Head().ID()
		}
	})
	return h
}
