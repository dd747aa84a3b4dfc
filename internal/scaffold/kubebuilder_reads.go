package scaffold

import (
	"go/ast"
	"go/token"
	"path"
	"sort"
	"strings"
)

// readDepth is how deep unwatchedReads follows the reconciler's client
// into the project's helpers.
const readDepth = 4

// unwatchedReads are the kinds the reconciler recv reads with Get or List
// that no watch of the controller registers: &pkg.T{} or new(pkg.T) given
// to Get, &pkg.TList{} to List, or a variable made or declared as one. It
// looks in recv's methods, in every file of its package, and follows the
// reconciler's client (the reconciler, or its Client field) into the
// project's functions it is passed to (lws lists ControllerRevisions in a
// helper of another package), where only reads through that client count.
func unwatchedReads(f *kbFile, gofiles []*kbFile, module, recv string, watches []watch, imps map[string]string, rep *portReport) []string {
	watched := map[string]bool{}
	for _, w := range watches {
		watched[w.typ] = true
	}
	r := &readScan{gofiles: gofiles, module: module, recv: recv, watched: watched, found: map[string]bool{}, seen: map[*ast.FuncDecl]bool{}, imps: imps, rep: rep,
		fields: map[string]bool{"Client": true}, twin: "SetupWithOpkit"}
	dir := path.Dir(f.Rel)
	for _, g := range gofiles {
		if path.Dir(g.Rel) != dir {
			continue
		}
		for _, d := range g.AST.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			if fn.Recv != nil && receiverType(fn) == recv {
				r.scan(g, fn, nil, 0)
			} else if fn.Recv == nil && g == f {
				r.scan(g, fn, nil, 0) // the file's own helpers, as before
			}
		}
	}
	out := make([]string, 0, len(r.found))
	for t := range r.found {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// readScan walks a reconciler's code for the kinds it reads.
type readScan struct {
	gofiles []*kbFile
	module  string
	recv    string
	watched map[string]bool
	found   map[string]bool
	seen    map[*ast.FuncDecl]bool
	imps    map[string]string
	rep     *portReport
	fields  map[string]bool // the receiver's fields that hold the manager's client
	twin    string          // the generated function that registers what it finds
}

// scan records fn's reads. clients names fn's parameters that hold the
// reconciler's client; nil for the reconciler's own code, where every Get
// and List counts.
func (r *readScan) scan(f *kbFile, fn *ast.FuncDecl, clients map[string]bool, depth int) {
	if r.seen[fn] {
		return
	}
	r.seen[fn] = true
	recvName := ""
	if fn.Recv != nil && len(fn.Recv.List) == 1 && len(fn.Recv.List[0].Names) == 1 {
		recvName = fn.Recv.List[0].Names[0].Name
	}
	isClient := func(e ast.Expr) bool {
		if clients != nil {
			id, ok := e.(*ast.Ident)
			return ok && clients[id.Name]
		}
		// The reconciler, or its Client field (kubebuilder's, embedded):
		// mgr.GetClient(), as main sets it up. Another field, such as
		// an API reader, is not the cache's.
		src := f.src(e)
		field, isField := strings.CutPrefix(src, recvName+".")
		return recvName != "" && (src == recvName || (isField && r.fields[field]))
	}
	vars := map[string]ast.Expr{} // variable -> the object it was made from
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.AssignStmt:
			for i, l := range x.Lhs {
				if id, ok := l.(*ast.Ident); ok && i < len(x.Rhs) {
					vars[id.Name] = x.Rhs[i]
				}
			}
		case *ast.ValueSpec:
			for _, id := range x.Names {
				if x.Type != nil {
					vars[id.Name] = &ast.UnaryExpr{Op: token.AND, X: &ast.CompositeLit{Type: x.Type}}
				}
			}
		case *ast.CallExpr:
			if depth < readDepth {
				r.follow(f, x, isClient, depth)
			}
			m := method(x)
			if (m != "Get" || len(x.Args) < 3) && (m != "List" || len(x.Args) < 2) {
				return true
			}
			if sel, ok := x.Fun.(*ast.SelectorExpr); clients != nil && (!ok || !isClient(sel.X)) {
				return true
			}
			var arg ast.Expr
			if m == "List" {
				arg = x.Args[1] // List(ctx, list, opts...), opts maybe none
			} else {
				arg = x.Args[2]
			}
			r.read(f, x, m, resolve(arg, vars))
		}
		return true
	})
}

// resolve is what arg, an object given to Get or List, was made from.
func resolve(arg ast.Expr, vars map[string]ast.Expr) ast.Expr {
	if u, ok := arg.(*ast.UnaryExpr); ok && u.Op == token.AND {
		if id, ok := u.X.(*ast.Ident); ok {
			if v, ok := vars[id.Name]; ok {
				if lit, ok := v.(*ast.CompositeLit); ok {
					return &ast.UnaryExpr{Op: token.AND, X: lit}
				}
				return v
			}
		}
		return arg
	}
	if id, ok := arg.(*ast.Ident); ok {
		return vars[id.Name]
	}
	return arg
}

// read records a Get or List (m) of the object arg at call.
func (r *readScan) read(f *kbFile, call *ast.CallExpr, m string, arg ast.Expr) {
	if arg == nil {
		return
	}
	typ, _, ok := objectType(f, arg)
	if !ok {
		return
	}
	if m == "List" {
		if !strings.HasSuffix(typ, "List") {
			return
		}
		typ = strings.TrimSuffix(typ, "List")
	}
	if r.watched[typ] || r.found[typ] || strings.Contains(typ, "Unstructured") || strings.Contains(typ, "PartialObjectMetadata") {
		return
	}
	// The type is written as f writes it: its package's name must mean
	// the same in the generated file.
	used := map[string]string{}
	f.uses(arg, used)
	for name, p := range used {
		if have, taken := r.imps[name]; taken && have != p {
			r.rep.needs(f.Rel, f.line(call), r.recv+" reads "+typ, "not registered: its package's name means another package in the generated file: register it with the cache in "+r.twin+" by hand")
			return
		}
	}
	r.found[typ] = true
	for name, p := range used {
		r.imps[name] = p
	}
	r.rep.mapped(f.Rel, f.line(call), r.recv+" reads "+typ, "registered with the cache in "+r.twin+", so the cached client reads it")
}

// follow scans the project function call calls, if it passes it the
// reconciler's client, with that parameter as the client.
func (r *readScan) follow(f *kbFile, call *ast.CallExpr, isClient func(ast.Expr) bool, depth int) {
	var name, pkgPath string
	switch fn := call.Fun.(type) {
	case *ast.Ident:
		name, pkgPath = fn.Name, r.module+"/"+path.Dir(f.Rel)
	case *ast.SelectorExpr:
		id, ok := fn.X.(*ast.Ident)
		if !ok || !strings.HasPrefix(f.Imports[id.Name], r.module+"/") {
			return
		}
		name, pkgPath = fn.Sel.Name, f.Imports[id.Name]
	default:
		return
	}
	var passed []int
	for i, a := range call.Args {
		if isClient(a) {
			passed = append(passed, i)
		}
	}
	if len(passed) == 0 {
		return
	}
	for _, g := range r.gofiles {
		if r.module+"/"+path.Dir(g.Rel) != pkgPath {
			continue
		}
		for _, d := range g.AST.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || fn.Name.Name != name || fn.Body == nil {
				continue
			}
			clients := map[string]bool{}
			i := 0
			for _, field := range fn.Type.Params.List {
				for _, id := range field.Names {
					for _, p := range passed {
						if p == i {
							clients[id.Name] = true
						}
					}
					i++
				}
				if len(field.Names) == 0 {
					i++
				}
			}
			if len(clients) > 0 {
				r.scan(g, fn, clients, depth+1)
			}
		}
	}
}

// hookReads are the kinds a webhook's defaulter or validator, hook (a
// &T{...} given to WithDefaulter or WithValidator), reads with Get or List
// through a field it was given the manager's client in (jobset's
// &jobSetWebhook{client: mgr.GetClient()} reads PersistentVolumeClaims in
// its validator): found in T's methods, and in the project's functions
// they pass the client to, as unwatchedReads finds a reconciler's.
// Unregistered, such a read fails on opkit, where controller-runtime's
// cache would have started an informer for it.
func hookReads(f *kbFile, gofiles []*kbFile, module string, hook ast.Expr, mgr, twin string, imps map[string]string, rep *portReport) []string {
	u, ok := hook.(*ast.UnaryExpr)
	if !ok || u.Op != token.AND {
		return nil
	}
	lit, ok := u.X.(*ast.CompositeLit)
	if !ok {
		return nil
	}
	var typ, dir string
	switch t := lit.Type.(type) {
	case *ast.Ident:
		typ, dir = t.Name, path.Dir(f.Rel)
	case *ast.SelectorExpr:
		id, isID := t.X.(*ast.Ident)
		rel, inModule := strings.CutPrefix(f.Imports[id.Name], module+"/")
		if !isID || !inModule {
			return nil
		}
		typ, dir = t.Sel.Name, rel
	default:
		return nil
	}
	fields := map[string]bool{}
	for _, el := range lit.Elts {
		if kv, isKV := el.(*ast.KeyValueExpr); isKV && f.src(kv.Value) == mgr+".GetClient()" {
			fields[f.src(kv.Key)] = true
		}
	}
	if len(fields) == 0 {
		return nil
	}
	r := &readScan{gofiles: gofiles, module: module, recv: typ, watched: map[string]bool{}, found: map[string]bool{}, seen: map[*ast.FuncDecl]bool{}, imps: imps, rep: rep, fields: fields, twin: twin}
	for _, g := range gofiles {
		if path.Dir(g.Rel) != dir || strings.HasSuffix(g.Rel, "_test.go") {
			continue
		}
		for _, d := range g.AST.Decls {
			if fn, isFn := d.(*ast.FuncDecl); isFn && fn.Body != nil && fn.Recv != nil && receiverType(fn) == typ {
				r.scan(g, fn, nil, 0)
			}
		}
	}
	out := make([]string, 0, len(r.found))
	for t := range r.found {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}
