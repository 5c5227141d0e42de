package suite_test

import (
	"crypto/rand"
	"fmt"

	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

func Example() {
	var us [32]byte // a user secret; random in real use
	id := suite.NewIdentity(us)

	// Sign a write (§5.5) and check it strictly.
	w := &suite.WriteBody{
		Scope: id.HomeScope, Record: suite.NamedRecordID("settings:liszto"),
		Field: "order", Op: suite.OpAssign, Value: []byte(`"alpha"`), Author: id.UID,
		Dot: suite.Dot{Device: suite.DeviceID{1}, HLC: suite.HLC{Millis: 1731312000123}},
	}
	sigInput, writeID, sig, err := suite.SignWrite(id.SignKey, w)
	if err != nil {
		panic(err)
	}
	fmt.Println(suite.VerifyStrict(id.UID[:], sigInput, sig), writeID == suite.H(sigInput))

	// Seal a record message into home (§5.4) and open it again.
	env, err := suite.SealEnvelope(suite.KindRecord, id.HomeKey, id.HomeTag, []byte(`{}`), rand.Reader)
	if err != nil {
		panic(err)
	}
	kind, pt, err := suite.OpenEnvelope(id.HomeKey, id.HomeTag, env)
	fmt.Println(kind, string(pt), err)
	fmt.Println(len(suite.BackupKey(us)), len(id.HomeTag))
	// Output:
	// true true
	// 1 {} <nil>
	// 56 32
}
