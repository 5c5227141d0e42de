// Command apisurface counts a Go module's public face: the packages an app
// can import (no internal/, no main, no test helpers), the exported names
// each declares, and the runnable Examples each carries. It reads source
// only (go/parser), so it works on any module directory, including a copy in
// the module cache, without building it.
//
// Usage:
//
//	go run ./internal/tools/apisurface [-v] [-imports FILE]... DIR...
//
// An exported name is a package-level exported const, var, func or type, an
// exported method of an exported type, an exported field of an exported
// struct, or an exported method of an exported interface. Names declared in
// several build-tagged files count once.
//
// -imports FILE prints the non-standard-library imports of FILE (a first
// program, usually an Example), which is how docs/public-api.md counts the
// imports an app needs.
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/ferry-sync/ferry/internal/tools/internal/astname"
)

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(s string) error { *m = append(*m, s); return nil }

func main() {
	verbose := flag.Bool("v", false, "list every exported name")
	var imports multi
	flag.Var(&imports, "imports", "print the non-stdlib imports of this file (repeatable)")
	flag.Parse()
	for _, f := range imports {
		list, err := fileImports(f)
		if err != nil {
			fmt.Fprintln(os.Stderr, "apisurface:", err)
			os.Exit(1)
		}
		fmt.Printf("%s: %d imports: %s\n", f, len(list), strings.Join(list, " "))
	}
	for _, dir := range flag.Args() {
		if err := report(dir, *verbose); err != nil {
			fmt.Fprintln(os.Stderr, "apisurface:", err)
			os.Exit(1)
		}
	}
}

// fileImports lists the imports of one file whose first path element has a
// dot (a module path), that is, everything but the standard library.
func fileImports(name string) ([]string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, im := range f.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		if strings.Contains(strings.SplitN(p, "/", 2)[0], ".") {
			out = append(out, p)
		}
	}
	return out, nil
}

type pkgCount struct {
	dir      string
	names    map[string]bool
	examples map[string]bool
}

func report(root string, verbose bool) error {
	pkgs := map[string]*pkgCount{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && skipDir(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		if !public(rel) {
			return nil
		}
		return countFile(pkgs, rel, path)
	})
	if err != nil {
		return err
	}
	var dirs []string
	names, examples := 0, 0
	for dir, p := range pkgs {
		if len(p.names) == 0 { // only tests, or package main
			continue
		}
		dirs = append(dirs, dir)
		names += len(p.names)
		examples += len(p.examples)
	}
	sort.Strings(dirs)
	fmt.Printf("%s: %d public packages, %d exported names, %d Examples\n", root, len(dirs), names, examples)
	for _, dir := range dirs {
		p := pkgs[dir]
		fmt.Printf("  %-40s %4d names %3d Examples\n", dir, len(p.names), len(p.examples))
		if verbose {
			var list []string
			for n := range p.names {
				list = append(list, n)
			}
			sort.Strings(list)
			for _, n := range list {
				fmt.Printf("      %s\n", n)
			}
		}
	}
	return nil
}

func skipDir(name string) bool {
	return name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")
}

// public reports whether a package directory (relative to the module root)
// is importable by another module and is not a command or test helper tree.
func public(rel string) bool {
	for _, el := range strings.Split(filepath.ToSlash(rel), "/") {
		if el == "internal" || el == "cmd" || el == "scripts" {
			return false
		}
	}
	return true
}

func countFile(pkgs map[string]*pkgCount, rel, path string) error {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	if err != nil {
		return err
	}
	if f.Name.Name == "main" {
		return nil
	}
	p := pkgs[rel]
	if p == nil {
		p = &pkgCount{dir: rel, names: map[string]bool{}, examples: map[string]bool{}}
		pkgs[rel] = p
	}
	if strings.HasSuffix(path, "_test.go") {
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && strings.HasPrefix(fd.Name.Name, "Example") {
				p.examples[fd.Name.Name] = true
			}
		}
		return nil
	}
	if strings.HasSuffix(f.Name.Name, "_test") {
		return nil
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			countFunc(p, d)
		case *ast.GenDecl:
			countGen(p, d)
		}
	}
	return nil
}

func countFunc(p *pkgCount, d *ast.FuncDecl) {
	if !d.Name.IsExported() {
		return
	}
	if d.Recv == nil {
		p.names[d.Name.Name] = true
		return
	}
	if recv := astname.Recv(d.Recv.List[0].Type); ast.IsExported(recv) {
		p.names[recv+"."+d.Name.Name] = true
	}
}

func countGen(p *pkgCount, d *ast.GenDecl) {
	for _, s := range d.Specs {
		switch s := s.(type) {
		case *ast.ValueSpec:
			for _, n := range s.Names {
				if n.IsExported() {
					p.names[n.Name] = true
				}
			}
		case *ast.TypeSpec:
			if !s.Name.IsExported() {
				continue
			}
			p.names[s.Name.Name] = true
			countMembers(p, s.Name.Name, s.Type)
		}
	}
}

func countMembers(p *pkgCount, typ string, e ast.Expr) {
	astname.Members(e, func(name string) { p.names[typ+"."+name] = true })
}
