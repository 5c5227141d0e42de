// Command unusedexport fails when a public package of this module exports a
// name that no non-test code outside that package uses: a name reachable
// only from tests (or from nowhere) should be unexported, moved to a test
// helper, or listed in the allow-list with the reason it is public.
//
// Usage (from the module root):
//
//	go run ./internal/tools/unusedexport [-allow FILE]
//
// Public packages are those an app can import: not under internal/, not
// commands. Package-level names are matched exactly (a selector pkg.Name in
// a file that imports the package). Methods, struct fields and interface
// methods are matched by name (a selector .Name, or a composite-literal key
// Name:, anywhere outside the package): without type information a use of
// another type's member of the same name counts, so the check errs toward
// silence, never toward a false alarm. Methods that satisfy standard
// interfaces (String, Error, MarshalText, ...) count as used.
//
// The allow-list (default internal/tools/unusedexport/allow.txt) has one
// entry a line: "import/path.Name reason" or "import/path.Type.Member
// reason"; # starts a comment. An entry that no longer matches a finding is
// reported too, so the list stays honest.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/ferry-sync/ferry/internal/tools/internal/astname"
)

// implicit are method names that standard-library interfaces call.
var implicit = map[string]bool{
	"Error": true, "String": true, "GoString": true, "Format": true, "Unwrap": true, "Is": true, "As": true,
	"MarshalText": true, "UnmarshalText": true, "MarshalJSON": true, "UnmarshalJSON": true,
	"MarshalBinary": true, "UnmarshalBinary": true, "ServeHTTP": true, "Read": true, "Write": true,
	"Close": true, "Len": true, "Less": true, "Swap": true, "Timeout": true, "Temporary": true,
	"LogValue": true, "Scan": true, "Value": true,
}

type pkg struct {
	path, dir string
	files     []*ast.File
	public    bool
}

func main() {
	allowFile := flag.String("allow", "internal/tools/unusedexport/allow.txt", "allow-list")
	flag.Parse()
	pkgs, err := load()
	if err != nil {
		fmt.Fprintln(os.Stderr, "unusedexport:", err)
		os.Exit(2)
	}
	allow, err := readAllow(*allowFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "unusedexport:", err)
		os.Exit(2)
	}
	findings := check(pkgs)
	bad := 0
	used := map[string]bool{}
	for _, f := range findings {
		if allowed(allow, f) {
			used[allowKey(allow, f)] = true
			continue
		}
		fmt.Printf("%s: exported, but no non-test code outside its package uses it\n", f)
		bad++
	}
	var stale []string
	for k := range allow {
		if !used[k] {
			stale = append(stale, k)
		}
	}
	sort.Strings(stale)
	for _, k := range stale {
		fmt.Printf("%s: in the allow-list but used (or gone): remove the entry\n", k)
		bad++
	}
	if bad > 0 {
		fmt.Printf("unusedexport: %d finding(s); unexport, move to a test helper, or allow with a reason in %s\n", bad, *allowFile)
		os.Exit(1)
	}
}

func load() ([]*pkg, error) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}\t{{.Dir}}\t{{.Name}}\t{{join .GoFiles \",\"}}", "./...").Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w", err)
	}
	mod, err := exec.Command("go", "list", "-m").Output()
	if err != nil {
		return nil, fmt.Errorf("go list -m: %w", err)
	}
	modPath := strings.TrimSpace(string(mod))
	var pkgs []*pkg
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		parts := strings.Split(sc.Text(), "\t")
		if len(parts) != 4 || parts[3] == "" {
			continue
		}
		p := &pkg{path: parts[0], dir: parts[1]}
		rel := strings.TrimPrefix(strings.TrimPrefix(p.path, modPath), "/")
		p.public = parts[2] != "main" && !isInternal(rel)
		for _, name := range strings.Split(parts[3], ",") {
			f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(p.dir, name), nil, parser.SkipObjectResolution)
			if err != nil {
				return nil, err
			}
			p.files = append(p.files, f)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs, sc.Err()
}

func isInternal(rel string) bool {
	for _, el := range strings.Split(rel, "/") {
		if el == "internal" || el == "cmd" {
			return true
		}
	}
	return false
}

// check returns the findings, "path.Name" or "path.Type.Member", sorted.
func check(pkgs []*pkg) []string {
	var out []string
	for _, p := range pkgs {
		if !p.public {
			continue
		}
		top, members := declared(p)
		usedTop, usedMember := uses(pkgs, p)
		inAPI, constType := apiTypes(p)
		for name := range top {
			// A type named in the exported API (a result, a parameter, a
			// field) is reachable through it; a constant of such a type is
			// one of its values, which an app compares against.
			if inAPI[name] || (constType[name] != "" && (usedTop[constType[name]] || inAPI[constType[name]])) {
				continue
			}
			if !usedTop[name] {
				out = append(out, p.path+"."+name)
			}
		}
		for key, name := range members {
			typ := strings.SplitN(key, ".", 2)[0]
			if !usedMember[name] && !implicit[name] && top[typ] {
				out = append(out, p.path+"."+key)
			}
		}
	}
	sort.Strings(out)
	return out
}

// apiTypes returns the identifiers named in the type expressions of the
// package's exported declarations (signatures, fields, underlying types),
// and the declared type of each exported constant.
func apiTypes(p *pkg) (inAPI map[string]bool, constType map[string]string) {
	inAPI, constType = map[string]bool{}, map[string]string{}
	mark := func(e ast.Node) {
		if e == nil {
			return
		}
		ast.Inspect(e, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok {
				inAPI[id.Name] = true
			}
			return true
		})
	}
	for _, f := range p.files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				if d.Recv != nil && !ast.IsExported(astname.Recv(d.Recv.List[0].Type)) {
					continue
				}
				mark(d.Type)
			case *ast.GenDecl:
				var last string
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.ValueSpec:
						if id, ok := s.Type.(*ast.Ident); ok {
							last = id.Name
						} else if s.Type != nil || len(s.Values) > 0 && d.Tok != token.CONST {
							last = ""
						}
						for _, n := range s.Names {
							if n.IsExported() {
								if d.Tok == token.CONST && last != "" {
									constType[n.Name] = last
								}
								mark(s.Type)
							}
						}
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							exportedOnly(s.Type, mark)
						}
					}
				}
			}
		}
	}
	return inAPI, constType
}

// exportedOnly marks the type expression of a type declaration, skipping
// the types of unexported struct fields.
func exportedOnly(e ast.Expr, mark func(ast.Node)) {
	st, ok := e.(*ast.StructType)
	if !ok {
		mark(e)
		return
	}
	for _, f := range st.Fields.List {
		exported := len(f.Names) == 0 // embedded
		for _, n := range f.Names {
			exported = exported || n.IsExported()
		}
		if exported {
			mark(f.Type)
		}
	}
}

// declared lists a package's exported package-level names and the exported
// members ("Type.Member" → "Member") of its exported types.
func declared(p *pkg) (top map[string]bool, members map[string]string) {
	top, members = map[string]bool{}, map[string]string{}
	for _, f := range p.files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				if d.Recv == nil {
					top[d.Name.Name] = true
				} else if r := astname.Recv(d.Recv.List[0].Type); ast.IsExported(r) {
					members[r+"."+d.Name.Name] = d.Name.Name
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								top[n.Name] = true
							}
						}
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							top[s.Name.Name] = true
							typeMembers(members, s.Name.Name, s.Type)
						}
					}
				}
			}
		}
	}
	return top, members
}

func typeMembers(members map[string]string, typ string, e ast.Expr) {
	astname.Members(e, func(name string) { members[typ+"."+name] = name })
}

// uses collects, over every package but p, the names used as p.Name in
// files importing p, and every selector or composite-literal key name.
func uses(pkgs []*pkg, p *pkg) (top, member map[string]bool) {
	top, member = map[string]bool{}, map[string]bool{}
	for _, q := range pkgs {
		if q == p {
			continue
		}
		for _, f := range q.files {
			local := ""
			for _, im := range f.Imports {
				path, _ := strconv.Unquote(im.Path.Value)
				if path != p.path {
					continue
				}
				local = filepath.Base(path)
				if im.Name != nil {
					local = im.Name.Name
				}
			}
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.SelectorExpr:
					if id, ok := n.X.(*ast.Ident); ok && local != "" && id.Name == local {
						top[n.Sel.Name] = true
					}
					member[n.Sel.Name] = true
				case *ast.KeyValueExpr:
					if id, ok := n.Key.(*ast.Ident); ok {
						member[id.Name] = true
					}
				}
				return true
			})
		}
	}
	return top, member
}

// allowKey is the allow-list entry covering finding f: the exact name, its
// type ("path.Type" covers "path.Type.Member"), or its package ("path.*").
func allowKey(allow map[string]string, f string) string {
	if _, ok := allow[f]; ok {
		return f
	}
	for k := range allow {
		if strings.HasSuffix(k, ".*") && strings.HasPrefix(f, strings.TrimSuffix(k, "*")) && !strings.Contains(strings.TrimPrefix(f, strings.TrimSuffix(k, "*")), "/") {
			return k
		}
		if strings.HasPrefix(f, k+".") {
			return k
		}
	}
	return ""
}

func allowed(allow map[string]string, f string) bool { return allowKey(allow, f) != "" }

func readAllow(name string) (map[string]string, error) {
	allow := map[string]string{}
	b, err := os.ReadFile(name)
	if os.IsNotExist(err) {
		return allow, nil
	}
	if err != nil {
		return nil, err
	}
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, reason, _ := strings.Cut(line, " ")
		key = strings.TrimSpace(key)
		if strings.TrimSpace(reason) == "" {
			return nil, fmt.Errorf("%s:%d: %s has no reason", name, i+1, key)
		}
		allow[key] = reason
	}
	return allow, nil
}
