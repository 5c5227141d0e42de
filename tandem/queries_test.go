package tandem

import "testing"

// Shorthands for the per-collection queries in tests that read their
// answer: each fails the test when the query reports an error (an unknown
// collection, a closed device), so reading an answer also checks that the
// collection was known. TestUnknownCollectionOneError checks the error.

func requestsT(t testing.TB, d *Device, c CollectionID) []JoinRequest {
	t.Helper()
	v, err := d.Requests(c)
	return answerT(t, "Requests", v, err)
}

func pendingLeavesT(t testing.TB, d *Device, c CollectionID) []Member {
	t.Helper()
	v, err := d.PendingLeaves(c)
	return answerT(t, "PendingLeaves", v, err)
}

func openInvitesT(t testing.TB, d *Device, c CollectionID) []InviteSummary {
	t.Helper()
	v, err := d.OpenInvites(c)
	return answerT(t, "OpenInvites", v, err)
}

func roleT(t testing.TB, d *Device, c CollectionID) Role {
	t.Helper()
	v, err := d.Role(c)
	return answerT(t, "Role", v, err)
}

func removedT(t testing.TB, d *Device, c CollectionID) bool {
	t.Helper()
	v, err := d.Removed(c)
	return answerT(t, "Removed", v, err)
}

func membershipT(t testing.TB, d *Device, c CollectionID) MembershipState {
	t.Helper()
	v, err := d.Membership(c)
	return answerT(t, "Membership", v, err)
}

func whyDeclinedT(t testing.TB, d *Device, c CollectionID) DeclineReason {
	t.Helper()
	v, err := d.WhyDeclined(c)
	return answerT(t, "WhyDeclined", v, err)
}

func inFlightT(t testing.TB, d *Device, c CollectionID) (string, bool) {
	t.Helper()
	what, ok, err := d.ChangeInFlight(c)
	if err != nil {
		t.Fatalf("ChangeInFlight: %v", err)
	}
	return what, ok
}

// answerT returns a query's answer v, failing t on its error.
func answerT[T any](t testing.TB, name string, v T, err error) T {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return v
}
