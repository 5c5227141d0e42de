// Package astname reads names out of Go syntax trees for the tools under
// internal/tools.
package astname

import "go/ast"

// Recv is the type name of a method receiver expression: T for T, *T,
// T[P] and *T[P, Q]; "" for anything else.
func Recv(e ast.Expr) string {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
		case *ast.IndexExpr:
			e = t.X
		case *ast.IndexListExpr:
			e = t.X
		case *ast.Ident:
			return t.Name
		default:
			return ""
		}
	}
}

// Members calls fn with each exported field of a struct type or method of
// an interface type; other types have none.
func Members(e ast.Expr, fn func(name string)) {
	var fl *ast.FieldList
	switch t := e.(type) {
	case *ast.StructType:
		fl = t.Fields
	case *ast.InterfaceType:
		fl = t.Methods
	default:
		return
	}
	for _, f := range fl.List {
		for _, n := range f.Names {
			if n.IsExported() {
				fn(n.Name)
			}
		}
	}
}
