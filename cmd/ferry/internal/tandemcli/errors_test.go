package tandemcli_test

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/internal/realtest"
)

// initialized is a device with a profile, a list "Groceries" with Milk,
// and no hub.
func initialized(t *testing.T) *device {
	d := newDevice(t, "dev")
	d.ok("init", "--name", "Aimee")
	d.ok("new", "Groceries")
	d.ok("add", "Groceries", "Milk", "qty=1")
	return d
}

// TestBadInput: every bad command line or value gives its one-line
// message and exit code, and changes nothing stored.
func TestBadInput(t *testing.T) {
	d := initialized(t)
	pw := writeFile(t, "pw", "secret\n")
	empty := writeFile(t, "empty", "")
	garbage := writeFile(t, "garbage", "<html>not a hub</html>")
	cases := []struct {
		args  []string
		stdin string
		code  int
		msg   string
	}{
		{[]string{"no-such-command"}, "", 2, `unknown command "no-such-command"`},
		{[]string{"lists", "--no-such-flag"}, "", 2, "unknown flag: --no-such-flag"},
		{[]string{"show"}, "", 2, "usage: ferry show LIST [ITEM]"},
		{[]string{"lists", "extra"}, "", 2, "usage: ferry lists"},
		{[]string{"new", ""}, "", 2, "a list's name is one line of text, not empty"},
		{[]string{"new", "a\nb"}, "", 2, "a list's name is one line of text"},
		{[]string{"new", strings.Repeat("x", 201)}, "", 2, "keep it under 200"},
		{[]string{"show", "Nope"}, "", 1, `there is no list "Nope" on this device`},
		{[]string{"show", "Groceries", "Cheese"}, "", 1, `"Groceries" has no item "Cheese"`},
		{[]string{"show", "Groceries", "Milk", "--all"}, "", 2, "--all, --hide-done and --tag apply to a whole list"},
		{[]string{"add", "Groceries"}, "", 2, "usage: ferry add LIST TITLE"},
		{[]string{"add", "Groceries", " "}, "", 2, "an item needs a title"},
		{[]string{"add", "Groceries", "Tea", "qty"}, "", 2, `"qty" is not FIELD=VALUE`},
		{[]string{"add", "Groceries", "Tea", "title=x"}, "", 2, "the title is the second argument"},
		{[]string{"add", "Groceries", "Tea", "--tag", ""}, "", 2, "a tag is one line of text, not empty"},
		{[]string{"add", "Groceries", "Tea", "qty=" + strings.Repeat("1", 61<<10)}, "", 2, "keep it under"},
		{[]string{"set", "Groceries", "Milk", "_meta=1"}, "", 2, "field names starting with _ are reserved"},
		{[]string{"set", "Groceries", "Milk", "tags=x"}, "", 2, "tags is a set of tags: use ferry tag"},
		{[]string{"set", "Groceries", "Milk", "a b=1"}, "", 2, "may have only letters"},
		{[]string{"set", "Groceries", "Milk", "qty=1", "qty=2"}, "", 2, "the field qty is given twice"},
		{[]string{"set", "Groceries", "Nothing", "qty=2"}, "", 1, `"Groceries" has no item "Nothing"`},
		{[]string{"tag", "Groceries", "Milk"}, "", 2, "usage: ferry tag LIST ITEM TAG..."},
		{[]string{"done", "Groceries", "Milk", "--undo=maybe"}, "", 2, `--undo takes true or false, not "maybe" (see ferry done --help)`},
		{[]string{"rename", "Groceries", ""}, "", 2, "a list's name is one line"},
		{[]string{"sync"}, "", 1, "not connected to a mail account yet: run ferry connect"},
		{[]string{"sync", "--timeout", "1s"}, "", 2, "--timeout 1s is out of range: give 5s to 1h"},
		{[]string{"sync", "--watch", "--timeout", "10s"}, "", 2, "--timeout applies to one sync, not to --watch"},
		{[]string{"sync", "--watch"}, "", 1, "not connected to a mail account yet"},
		{[]string{"hub", "qr", "--yes"}, "", 1, "not connected to a mail account yet"},
		{[]string{"hub", "nope"}, "", 2, "unknown hub command"},
		{[]string{"backup-key"}, "n\n", 1, "not shown (answer y to show it)"},
		{[]string{"backup-key"}, "", 1, "not shown"},
		{[]string{"init"}, "", 1, "already holds a device"},
		{[]string{"init", "--name", "a\nb"}, "", 2, "--name must be one line"},
		{[]string{"restore", "--backup-key-file", pw}, "", 1, "already holds a device: restore into another --profile"},
		{[]string{"connect"}, "", 2, "usage: ferry connect jmap|imap|paste"},
		{[]string{"connect", "smtp"}, "", 2, `unknown way to connect "smtp"`},
		{[]string{"connect", "imap", "127.0.0.1:99999", "--user", "x", "--password-file", pw}, "", 2, `port "99999" is out of range`},
		{[]string{"connect", "imap", "127.0.0.1:143", "--password-file", pw, "--security", "none"}, "", 2, "give the account's user name: --user USER"},
		{[]string{"connect", "imap", "127.0.0.1:143", "--user", "x", "--security", "ssl", "--password-file", pw}, "", 2, `--security "ssl": use tls, starttls or none`},
		{[]string{"connect", "imap", "127.0.0.1", "--user", "x", "--security", "starttls", "--password-file", pw}, "", 2, "port 993 is implicit TLS: use --security tls there"},
		{[]string{"connect", "imap", "127.0.0.1:143", "--user", "x", "--timeout", "0s", "--password-file", pw}, "", 2, "--timeout 0s is out of range: give 1s to 2m"},
		{[]string{"connect", "imap", "127.0.0.1:143", "--user", "x", "--timeout", "3m", "--password-file", pw}, "", 2, "out of range"},
		{[]string{"connect", "imap", "127.0.0.1:143", "--user", "x", "--security", "none"}, "", 2, "no password: pass --password-file FILE"},
		{[]string{"connect", "imap", "127.0.0.1:143", "--user", "x", "--security", "none", "--password-file", empty}, "", 2, "is empty: put the password on its first line"},
		{[]string{"connect", "imap", "127.0.0.1:143", "--user", "x", "--security", "none", "--password-file", "/nonexistent/pw"}, "", 1, "cannot read the password from /nonexistent/pw"},
		{[]string{"connect", "imap", "127.0.0.1:143", "--user", "x", "--password", "secret"}, "", 2, "unknown flag: --password"},
		{[]string{"connect", "jmap", "ftp://example.com"}, "", 2, "a JMAP URL starts with https://"},
		{[]string{"connect", "jmap", "http://u@127.0.0.1:1/"}, "", 2, "put the user name in --user"},
		{[]string{"connect", "paste", garbage}, "", 1, "this is not the text ferry hub qr shows: paste the whole line it printed"},
		{[]string{"connect", "paste"}, `{"kind":"pop3"}`, 1, `unknown hub kind "pop3"`},
		{[]string{"connect", "paste"}, `{"kind":"imap","host":"h","port":0,"user":"u"}`, 1, "a port from 1 to 65535"},
		{[]string{"man", filepath.Join(pw, "man")}, "", 1, "cannot make the directory " + filepath.Join(pw, "man") + ": not a directory"},
		{[]string{"copy", "Nope"}, "", 1, `there is no list "Nope"`},
		{[]string{"share", "Groceries", "--uses", "0"}, "", 2, "--uses 0 is out of range: give 1 to 1000"},
		{[]string{"share", "Groceries", "--uses", "1001"}, "", 2, "--uses 1001 is out of range"},
		{[]string{"share", "Groceries", "--expires", "-1s"}, "", 2, "--expires -1s is out of range"},
		{[]string{"share", "Groceries", "--link", "--no-wait"}, "", 2, "--no-wait applies to the QR form"},
		{[]string{"share", "Groceries", "--link"}, "", 1, "not connected to a mail account yet"},
		{[]string{"role", "Groceries", "X", "owner"}, "", 2, `a member is a writer or a reader, not "owner"`},
		{[]string{"device", "add"}, "", 1, "not connected to a mail account yet"},
		{[]string{"device", "join", "nope"}, "", 1, "already holds a device: join from another --profile"},
		{[]string{"join", "garbage"}, "", 1, "this is not a Ferry invite"},
		{[]string{"approve", "Nobody"}, "", 1, "not connected to a mail account yet"},
		{[]string{"copy", "Groceries", ""}, "", 2, "a list's name is one line"},
		{[]string{"shwo"}, "", 2, `unknown command "shwo": did you mean show? (see ferry help)`},
		{[]string{"help", "nosuch"}, "", 2, `there is no command or help topic "nosuch" (ferry help lists them)`},
		{[]string{"sync", "--timeout", "5"}, "", 2, `--timeout takes a duration such as 30s, 5m, 1h or 7d, not "5" (see ferry sync --help)`},
		{[]string{"lists", "--bogus"}, "", 2, "unknown flag: --bogus (see ferry lists --help)"},
		{[]string{"connect", "imap"}, "", 2, "usage: ferry connect imap HOST[:PORT] --user USER (see ferry connect imap --help)"},
		{[]string{"set", "Groceries", "Milk", "title="}, "", 2, "an item needs a title: give title=TEXT, or ferry rm to delete the item"},
		{[]string{"new", "groceries"}, "", 1, `you already have a list called "Groceries"`},
	}
	before := d.stored()
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			r := d.runIn(c.stdin, c.args...)
			wantErr(t, r, c.code, c.msg)
			if r.out != "" && c.code == 2 {
				t.Errorf("stdout %q on a usage error", r.out)
			}
			if c.args[0] == "backup-key" && r.out != "" {
				t.Errorf("backup key shown after no: %q", r.out)
			}
			// The same error as JSON on stderr.
			if rj := d.runIn(c.stdin, append(c.args, "--json")...); c.args[0] != "no-such-command" && c.args[0] != "shwo" && c.args[0] != "help" && c.args[0] != "man" {
				lines := strings.Split(strings.TrimSpace(rj.err), "\n")
				last := lines[len(lines)-1] // after a prompt, if any
				if rj.code != c.code || !strings.HasPrefix(last, `{"error":{"kind":"`) || !strings.HasSuffix(last, fmt.Sprintf(`"exit":%d}`, c.code)) || strings.Contains(last, `"kind":"internal"`) {
					t.Errorf("--json: exit %d, stderr %q", rj.code, rj.err)
				}
			}
		})
	}
	if after := d.stored(); after != before {
		t.Errorf("a failed command changed the profile:\nbefore %s\nafter  %s", before, after)
	}
}

// TestProfiles: no device yet, a profile whose parent is missing (not
// created), --profile over FERRY_HOME, and the XDG default.
func TestProfiles(t *testing.T) {
	d := newDevice(t, "fresh")
	wantErr(t, d.run("lists"), 1, "there is no Ferry device in "+d.dir+" yet: run ferry init")
	if _, err := os.Stat(d.dir); err == nil {
		t.Fatal("lists created the profile directory")
	}
	deep := filepath.Join(d.home, "no", "such", "parent")
	wantErr(t, d.run("init", "--profile", deep), 1, filepath.Dir(deep)+" does not exist: create it first")
	if _, err := os.Stat(filepath.Join(d.home, "no")); err == nil {
		t.Fatal("init made the missing parents")
	}
	other := filepath.Join(d.home, "other")
	d.ok("init", "--name", "Bo", "--profile", other)
	if _, err := os.Stat(filepath.Join(other, "profile.json")); err != nil {
		t.Fatalf("--profile did not win over FERRY_HOME: %v", err)
	}
	wantErr(t, d.run("lists"), 1, "no Ferry device") // FERRY_HOME is still empty

	// The XDG default, without FERRY_HOME.
	x := &device{t: t, home: t.TempDir()}
	x.dir = ""
	r := x.runXDG("init", "--name", "Cy")
	if r.code != 0 {
		t.Fatalf("init at the default place: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(x.home, "data", "ferry", "profile.json")); err != nil {
		t.Fatalf("not under $XDG_DATA_HOME/ferry: %v", err)
	}
	nohome := &device{t: t, home: "", env: []string{"FERRY_HOME=", "HOME=", "XDG_DATA_HOME=relative/ignored"}}
	wantErr(t, nohome.run("init", "--name", "Cy"), 2, "no place for the profile: pass --profile DIR or set FERRY_HOME")
	var id struct{ Profile string }
	r = x.runXDG("status", "--json")
	if r.code != 0 || !strings.Contains(r.out, filepath.Join(x.home, "data", "ferry")) {
		t.Fatalf("status at the default place: %+v %v", r, id)
	}
}

// runXDG runs ferry with XDG_DATA_HOME=home/data and no FERRY_HOME.
func (d *device) runXDG(args ...string) result {
	d.t.Helper()
	saved := d.dir
	defer func() { d.dir = saved }()
	d.env = []string{"XDG_DATA_HOME=" + filepath.Join(d.home, "data")}
	defer func() { d.env = nil }()
	// FERRY_HOME= (empty) is the same as unset.
	d.dir = ""
	return d.run(args...)
}

// TestRestoreBadKey: a wrong backup key is refused with the fix, and
// leaves no profile behind.
func TestRestoreBadKey(t *testing.T) {
	d := newDevice(t, "new")
	key := strings.Repeat("abcd ", 14)
	wantErr(t, d.runIn(key+"\n", "restore", "--name", "Aimee", "--backup-key-file", "-"), 1, "this backup key is not right: check each group of four and type it again")
	if _, err := os.Stat(d.dir); err == nil {
		t.Fatal("a refused restore left the profile directory")
	}
	d.env = []string{"FERRY_BACKUP_KEY=too short"}
	wantErr(t, d.run("restore", "--name", "Aimee"), 1, "this backup key is not right")
	d.env = nil
	wantErr(t, d.run("restore", "--name", "Aimee"), 2, "no backup key: pass --backup-key-file FILE")
}

// silentListener accepts connections and never answers.
func silentListener(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	return l.Addr().String()
}

// closedPort is an address nothing listens on.
func closedPort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// TestConnectErrors: an address nobody listens on, a port that never
// greets, an HTML 404, a JMAP 401 with an HTML page, a TLS mismatch: one
// line each, within seconds, saying what Ferry waited for, nothing saved.
func TestConnectErrors(t *testing.T) {
	d := initialized(t)
	d.env = []string{"FERRY_PASSWORD=secret"}
	html404 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(404)
		fmt.Fprint(w, "<!DOCTYPE html><html><body><h1>Not Found</h1></body></html>")
	}))
	defer html404.Close()
	html401 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(401)
		fmt.Fprint(w, "<html><body>401 Unauthorized</body></html>")
	}))
	defer html401.Close()
	htmlOK := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html><body>Welcome</body></html>")
	}))
	defer htmlOK.Close()
	tlsSrv := httptest.NewUnstartedServer(http.NotFoundHandler())
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes are the point
	tlsSrv.StartTLS()
	defer tlsSrv.Close()
	tlsAddr := strings.TrimPrefix(tlsSrv.URL, "https://")
	silent, closed := silentListener(t), closedPort(t)
	starttls, nostarttls := fakeSTARTTLS(t, tlsSrv.TLS), fakeSTARTTLS(t, nil)
	cases := []struct {
		args []string
		msg  string
	}{
		{[]string{"imap", closed, "--user", "x", "--security", "none"}, "nothing is listening at " + closed + ": check the host and port"},
		{[]string{"imap", silent, "--user", "x", "--security", "none", "--timeout", "1s"}, "accepted the connection but sent no IMAP greeting within 1s: is it an IMAP port? (a TLS port such as 993 needs --security tls)"},
		{[]string{"imap", silent, "--user", "x", "--timeout", "1s"}, "no TLS answer from " + silent + " within 1s"},
		{[]string{"jmap", html404.URL}, "no JMAP session at " + html404.URL + "/.well-known/jmap (HTTP 404): give the JMAP session URL"},
		{[]string{"jmap", html401.URL + "/jmap/session", "--user", "x"}, "refused this user name and password (or token): check them and connect again"},
		{[]string{"jmap", htmlOK.URL}, "answers, but not with a JMAP session"},
		{[]string{"jmap", "https://" + strings.TrimPrefix(html404.URL, "http://")}, "does not speak TLS: use http://"},
		{[]string{"jmap", "http://" + silent, "--timeout", "1s"}, "no JMAP answer from " + silent + " within 1s"},
		{[]string{"jmap", "http://" + closed}, "nothing is listening at " + closed},
		{[]string{"jmap", tlsSrv.URL}, "the certificate of " + tlsAddr + " is signed by an authority this computer does not know (unknown issuer)"},
		{[]string{"imap", tlsAddr, "--user", "x"}, "the certificate of " + tlsAddr + " is signed by an authority this computer does not know (unknown issuer)"},
		{[]string{"imap", strings.TrimPrefix(html404.URL, "http://"), "--user", "x"}, "does not speak TLS"},
		{[]string{"imap", starttls, "--user", "x", "--security", "starttls"}, "the certificate of " + starttls + " is signed by an authority this computer does not know (unknown issuer)"},
		{[]string{"imap", nostarttls, "--user", "x", "--security", "starttls"}, nostarttls + " does not offer STARTTLS: use --security tls"},
		{[]string{"jmap", "http://no-such-host.invalid"}, "no-such-host.invalid is not a host name Ferry can find: check the address"},
	}
	before := d.stored()
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			start := time.Now()
			wantErr(t, d.run(append([]string{"connect"}, c.args...)...), 1, c.msg)
			if el := time.Since(start); el > realtest.Scale(8*time.Second) {
				t.Errorf("took %s", el)
			}
		})
	}
	if d.stored() != before {
		t.Error("a failed connect changed the profile")
	}
}

// fakeJMAP serves a JMAP session document the first `good` times, then
// 401: a credential revoked after connecting.
func fakeJMAP(t *testing.T, good int32) *httptest.Server {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) > good {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(401)
			fmt.Fprint(w, "<html>Unauthorized</html>")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"apiUrl":"http://%s/api","capabilities":{"urn:ietf:params:jmap:core":{},"urn:ietf:params:jmap:mail":{}},"accounts":{},"primaryAccounts":{},"username":"x","downloadUrl":"","uploadUrl":"","eventSourceUrl":"","state":"1"}`, r.Host)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestCredentialRevoked: §13.3 "Sync access was revoked or changed.
// Reconnect to keep syncing." from sync, sync --watch and status; local
// data untouched. Then the hub going away: offline, work goes on.
func TestCredentialRevoked(t *testing.T) {
	d := initialized(t)
	d.env = []string{"FERRY_PASSWORD=secret"}
	srv := fakeJMAP(t, 1)
	r := d.run("connect", "jmap", srv.URL, "--user", "x")
	wantErr(t, r, 1, "Sync access was revoked or changed. Reconnect to keep syncing.")
	if !strings.Contains(r.out, "Connected to JMAP "+srv.URL+"/.well-known/jmap") {
		t.Errorf("connect: %q", r.out)
	}
	lists := d.ok("lists", "--json")
	wantErr(t, d.run("sync"), 1, "Sync access was revoked or changed. Reconnect to keep syncing.")
	wantErr(t, d.run("sync", "--watch"), 1, "Sync access was revoked or changed. Reconnect to keep syncing.")
	var st struct{ Connection, Message string }
	d.jsonOut(&st, "status")
	if st.Connection != "auth" || st.Message != "Sync access was revoked or changed. Reconnect to keep syncing." {
		t.Errorf("status %+v", st)
	}
	if out := d.ok("status"); !strings.Contains(out, "can't sync") {
		t.Errorf("status does not say the list can't sync:\n%s", out)
	}
	if d.ok("lists", "--json") != lists {
		t.Error("local data changed")
	}
	d.ok("add", "Groceries", "Tea") // local work goes on

	// The hub goes away: offline; sharing changes need the network.
	srv.Close()
	wantErr(t, d.run("sync"), 1, "The sync hub can't be reached; everything keeps working here and syncs when it's back.")
	wantErr(t, d.run("role", "Groceries", "Someone", "reader"), 1, "Changing who a list is shared with needs a connection.")
	wantErr(t, d.run("approve", "Someone"), 1, "Changing who a list is shared with needs a connection.")
	d.jsonOut(&st, "status")
	if st.Connection != "offline" {
		t.Errorf("status after the hub went away: %+v", st)
	}
}

// TestSwitchHub: connecting another account asks first; no is no.
func TestSwitchHub(t *testing.T) {
	d := initialized(t)
	d.env = []string{"FERRY_PASSWORD=secret"}
	one, two := fakeJMAP(t, 100), fakeJMAP(t, 100)
	d.run("connect", "jmap", one.URL, "--user", "x") // its sync fails (the fake has no mail); the hub is saved
	r := d.runIn("n\n", "connect", "jmap", two.URL, "--user", "x")
	wantErr(t, r, 1, "still connected to JMAP "+one.URL)
	var st struct{ Hub string }
	d.jsonOut(&st, "status")
	if !strings.Contains(st.Hub, one.URL) {
		t.Errorf("hub %q after declining the switch", st.Hub)
	}
	d.runIn("y\n", "connect", "jmap", two.URL, "--user", "x")
	d.jsonOut(&st, "status")
	if !strings.Contains(st.Hub, two.URL) {
		t.Errorf("hub %q after the switch", st.Hub)
	}
}

// TestJMAPToken: without --user the secret is a bearer token.
func TestJMAPToken(t *testing.T) {
	d := initialized(t)
	var auth atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if auth.Load() == nil {
			auth.Store(r.Header.Get("Authorization"))
		}
		w.WriteHeader(401)
	}))
	defer srv.Close()
	tok := writeFile(t, "tok", "fmu1-token\n")
	wantErr(t, d.run("connect", "jmap", srv.URL+"/jmap/session", "--password-file", tok), 1, "refused this user name and password (or token)")
	if got, _ := auth.Load().(string); got != "Bearer fmu1-token" {
		t.Errorf("Authorization %q, want Bearer fmu1-token", got)
	}
}

// fakeSTARTTLS is an IMAP server that greets, accepts STARTTLS and then
// does the TLS handshake with cfg's (self-signed) certificate; with a nil
// cfg it refuses STARTTLS.
func fakeSTARTTLS(t *testing.T, cfg *tls.Config) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serveConns(t, l, func(c net.Conn) {
		fmt.Fprint(c, "* OK [CAPABILITY IMAP4rev1 STARTTLS LOGINDISABLED] hi\r\n")
		line, _ := bufio.NewReader(c).ReadString('\n')
		tag, _, _ := strings.Cut(line, " ")
		if cfg == nil {
			fmt.Fprintf(c, "%s BAD unknown command\r\n", tag)
			return
		}
		fmt.Fprintf(c, "%s OK begin TLS\r\n", tag)
		tls.Server(c, cfg).Handshake()
	})
	return l.Addr().String()
}

// serveConns accepts on l until the test ends (then l is closed) and runs
// handle on each connection, with a 10 s deadline, closing it afterwards.
func serveConns(t *testing.T, l net.Listener, handle func(net.Conn)) {
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(10 * time.Second))
				handle(c)
			}()
		}
	}()
}
