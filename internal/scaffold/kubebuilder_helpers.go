package scaffold

import (
	"fmt"
	"go/ast"
	"go/token"
	"path"
	"sort"
	"strings"
)

// srcEdit replaces the bytes [start, end) of a file's source with text.
type srcEdit struct {
	start, end int
	text       string
}

// applyEdits is f's source from base to stop with edits applied.
func applyEdits(f *kbFile, base, stop int, edits []srcEdit) (string, error) {
	sort.Slice(edits, func(i, j int) bool { return edits[i].start > edits[j].start })
	src := append([]byte(nil), f.Src[base:stop]...)
	last := stop + 1
	for _, e := range edits {
		if e.start < base || e.end > stop || e.end > last {
			return "", fmt.Errorf("%s: overlapping or outside edits", f.Rel)
		}
		last = e.start
		s, t := e.start-base, e.end-base
		src = append(src[:s:s], append([]byte(e.text), src[t:]...)...)
	}
	return string(src), nil
}

// pkgPathOf is the import path of the package f belongs to.
func pkgPathOf(f *kbFile, module string) string {
	if d := path.Dir(f.Rel); d != "." {
		return module + "/" + d
	}
	return module
}

// ctorKey is the key portedSetups gives a constructor of a type: its
// value is the type's key, so that v := pkg.NewX(...) followed by
// v.SetupWithManager(mgr) finds X's twin.
func ctorKey(pkgPath, fn string) setupKey { return setupKey(pkgPath + "." + fn + "()") }

// kindKey is the key portedSetups gives a kind whose webhook setup was
// ported, whatever its setup function is named.
func kindKey(importPath, kind string) setupKey { return setupKey("kind:" + importPath + "." + kind) }

// moduleKey holds the project's module path in portedSetups, for
// library.
const moduleKey setupKey = "module:"

// whyKey is the key portedSetups has for why a helper, by its own key,
// has no twin.
func whyKey(key setupKey) setupKey { return "why:" + key }

// servesKey is the key portedSetups has for a twin, by its own key, that
// registers webhooks, itself or through a twin it calls.
func servesKey(key setupKey) setupKey { return "serves:" + key }

// constructors records, for each function of f that returns one type of
// its own package (func NewX(...) *X), the type it returns.
func constructors(f *kbFile, pkgPath string, setups portedSetups) {
	for _, d := range f.AST.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Recv != nil || fn.Type.Results == nil || len(fn.Type.Results.List) != 1 || len(fn.Type.Results.List[0].Names) > 1 {
			continue
		}
		t := fn.Type.Results.List[0].Type
		if st, isStar := t.(*ast.StarExpr); isStar {
			t = st.X
		}
		if id, isID := t.(*ast.Ident); isID && id.IsExported() {
			setups[ctorKey(pkgPath, fn.Name.Name)] = pkgPath + "." + id.Name
		}
	}
}

// typeOf is the key of the type e makes: &pkg.X{...}, new(pkg.X),
// pkg.NewX(...) or NewX(...) of a recorded constructor; "" if unknown.
func typeOf(f *kbFile, e ast.Expr, pkgPath string, setups portedSetups) string {
	if typ, kind, ok := objectType(f, e); ok {
		pkg, _, qualified := strings.Cut(strings.TrimPrefix(typ, "*"), ".")
		if !qualified {
			return pkgPath + "." + kind
		}
		if p := f.Imports[pkg]; p != "" {
			return p + "." + kind
		}
		return ""
	}
	call, ok := e.(*ast.CallExpr)
	if !ok {
		return ""
	}
	switch fun := call.Fun.(type) {
	case *ast.Ident:
		return setups[ctorKey(pkgPath, fun.Name)]
	case *ast.SelectorExpr:
		if id, isID := fun.X.(*ast.Ident); isID && f.Imports[id.Name] != "" {
			return setups[ctorKey(f.Imports[id.Name], fun.Sel.Name)]
		}
	}
	return ""
}

// varTypes records in vars the type of each variable n declares or
// assigns as v := <typeOf> or v = <typeOf> (lws's suite assigns its
// package variable pw = webhooks.NewPodWebhook(nil)).
func varTypes(f *kbFile, n ast.Node, pkgPath string, setups portedSetups, vars map[string]string) {
	ast.Inspect(n, func(n ast.Node) bool {
		a, ok := n.(*ast.AssignStmt)
		if !ok || (a.Tok != token.DEFINE && a.Tok != token.ASSIGN) || len(a.Lhs) != 1 || len(a.Rhs) != 1 {
			return true
		}
		if id, isID := a.Lhs[0].(*ast.Ident); isID {
			if t := typeOf(f, a.Rhs[0], pkgPath, setups); t != "" {
				vars[id.Name] = t
			}
		}
		return true
	})
}

// managerUses are the edits that move n's uses of controller-runtime's
// manager, named mgr, onto opkit's: its methods to their counterparts
// (managerMethods; GetEventRecorder and GetEventRecorderFor through crport;
// AddHealthzCheck and AddReadyzCheck to AddHealthCheck and AddReadyCheck),
// and the manager passed to a function, or to a SetupWithManager, that has
// an opkit twin, to the twin. vars gives the types of variables (see
// varTypes). The manager passed to a function of a library other than
// controller-runtime (cert-controller's rotator.AddRotator) becomes the
// controller-runtime manager opkit's hosts
// (crport.MustControllerRuntimeManager); hosted names those functions.
// why says what has no counterpart, if anything. serves says whether a
// twin it calls serves webhooks (servesKey), so that the port's manager
// has a webhook server.
func managerUses(f *kbFile, n ast.Node, mgr, pkgPath string, setups portedSetups, vars map[string]string, imps map[string]string) (edits []srcEdit, serves bool, hosted []string, why string) {
	off := func(p token.Pos) int { return f.Fset.Position(p).Offset }
	handled := map[*ast.Ident]bool{}
	isMgr := func(e ast.Expr) (*ast.Ident, bool) {
		id, ok := e.(*ast.Ident)
		return id, ok && id.Name == mgr
	}
	ast.Inspect(n, func(n ast.Node) bool {
		if why != "" {
			return false
		}
		switch x := n.(type) {
		case *ast.CallExpr:
			if sel, ok := x.Fun.(*ast.SelectorExpr); ok {
				if id, isM := isMgr(sel.X); isM {
					handled[id] = true
					node, to, crport := managerMethod(f, x, sel, mgr)
					if node == nil {
						why = mgr + "." + sel.Sel.Name + ": a method of controller-runtime's manager opkit's does not have, or names differently"
						return false
					}
					if crport {
						imps["crport"] = opkitCrport
					}
					edits = append(edits, srcEdit{off(node.Pos()), off(node.End()), to})
					// A health check's checker, whose name alone changes,
					// may use the manager too.
					return node != ast.Node(x)
				}
			}
			for _, a := range x.Args {
				id, isM := isMgr(a)
				if !isM {
					continue
				}
				key, fun := twinOf(f, x, pkgPath, setups, vars)
				twin, ported := setups[key]
				if (key == "" || !ported) && library(f, x, setups) {
					handled[id] = true
					imps["crport"] = opkitCrport
					edits = append(edits, srcEdit{off(a.Pos()), off(a.End()), "crport.MustControllerRuntimeManager(" + mgr + ")"})
					hosted = append(hosted, f.src(x.Fun))
					continue
				}
				if key == "" || !ported {
					why = "passes the manager to " + headline(f.src(x.Fun)) + ", which has no opkit twin (see its entry)"
					return false
				}
				handled[id] = true
				_, webhooks := setups[servesKey(key)]
				serves = serves || webhooks
				edits = append(edits, srcEdit{off(fun.Pos()), off(fun.End()), twin})
				break // one twin per call
			}
		case *ast.Ident:
			if x.Name == mgr && !handled[x] {
				why = "uses the manager other than through methods opkit's has: port it by hand"
				return false
			}
		case *ast.FuncLit:
			for _, p := range x.Type.Params.List {
				for _, name := range p.Names {
					if name.Name == mgr {
						why = "a function literal's parameter shadows the manager: port it by hand"
						return false
					}
				}
			}
		}
		return true
	})
	if why != "" {
		return nil, false, nil, why
	}
	return edits, serves, hosted, ""
}

// library says whether x calls a function of a package outside the
// project (setups[moduleKey]) and outside controller-runtime, whose
// manager the converter maps itself: pkg.F(mgr), such as cert-controller's
// rotator.AddRotator(mgr, ...).
func library(f *kbFile, x *ast.CallExpr, setups portedSetups) bool {
	module := setups[moduleKey]
	sel, ok := x.Fun.(*ast.SelectorExpr)
	if !ok || module == "" {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	if !ok {
		return false
	}
	imp := f.Imports[id.Name]
	switch {
	case imp == "", imp == module, strings.HasPrefix(imp, module+"/"),
		imp == "sigs.k8s.io/controller-runtime", strings.HasPrefix(imp, "sigs.k8s.io/controller-runtime/"):
		return false
	}
	return true
}

// twinOf is the key under which portedSetups holds the twin of the
// function call x calls with the manager, and the identifier the twin's
// name replaces: F(mgr) and pkg.F(mgr) (a webhook setup or a helper), or
// v.SetupWithManager(mgr) and (&pkg.X{...}).SetupWithManager(mgr) (a
// reconciler).
func twinOf(f *kbFile, x *ast.CallExpr, pkgPath string, setups portedSetups, vars map[string]string) (setupKey, *ast.Ident) {
	switch fun := x.Fun.(type) {
	case *ast.Ident:
		return setupKey(pkgPath + "." + fun.Name), fun
	case *ast.SelectorExpr:
		if fun.Sel.Name == "SetupWithManager" {
			recv := fun.X
			if p, ok := recv.(*ast.ParenExpr); ok {
				recv = p.X
			}
			if id, ok := recv.(*ast.Ident); ok && vars[id.Name] != "" {
				return setupKey(vars[id.Name]), fun.Sel
			}
			if t := typeOf(f, recv, pkgPath, setups); t != "" {
				return setupKey(t), fun.Sel
			}
			return "", nil
		}
		if id, ok := fun.X.(*ast.Ident); ok && f.Imports[id.Name] != "" {
			return setupKey(f.Imports[id.Name] + "." + fun.Sel.Name), fun.Sel
		}
		// A method of a value whose type is known: lws's
		// pw := webhooks.NewPodWebhook(sp); pw.Setup(mgr).
		if id, ok := fun.X.(*ast.Ident); ok && vars[id.Name] != "" {
			return setupKey(vars[id.Name] + "." + fun.Sel.Name), fun.Sel
		}
		if t := typeOf(f, fun.X, pkgPath, setups); t != "" {
			return setupKey(t + "." + fun.Sel.Name), fun.Sel
		}
	}
	return "", nil
}

// managerParam is the name of fn's parameter of controller-runtime's
// manager type, if fn has exactly one and returns nothing or only an
// error: a helper such as jobset's setupControllers(mgr ctrl.Manager) or
// its webhooks.Setup(mgr ctrl.Manager) error, which opkit can give a twin.
func managerParam(f *kbFile, fn *ast.FuncDecl) (string, ast.Expr) {
	if fn.Recv != nil || fn.Body == nil {
		return "", nil
	}
	if r := fn.Type.Results; r != nil && (len(r.List) != 1 || len(r.List[0].Names) > 1 || f.src(r.List[0].Type) != "error") {
		return "", nil
	}
	name, typ := "", ast.Expr(nil)
	for _, p := range fn.Type.Params.List {
		sel, ok := p.Type.(*ast.SelectorExpr)
		if !ok || sel.Sel.Name != "Manager" {
			continue
		}
		id, ok := sel.X.(*ast.Ident)
		if !ok {
			continue
		}
		switch f.Imports[id.Name] {
		case "sigs.k8s.io/controller-runtime", "sigs.k8s.io/controller-runtime/pkg/manager":
			if len(p.Names) != 1 || name != "" {
				return "", nil
			}
			name, typ = p.Names[0].Name, p.Type
		}
	}
	return name, typ
}

// helperTwinName is the name of a helper's twin: SetupWithManager-like
// names trade WithManager for WithOpkit, others gain WithOpkit.
func helperTwinName(name string) string {
	if base, ok := strings.CutSuffix(name, "WithManager"); ok {
		return base + "WithOpkit"
	}
	return name + "WithOpkit"
}

// portHelper renders the twin of fn, a helper that takes the manager as
// mgr (managerParam): the same function, named twin, taking opkit's
// manager, with its uses of the manager moved onto opkit's. serves says
// whether it registers webhooks (see managerUses); why says what it could
// not move.
func portHelper(f *kbFile, fn *ast.FuncDecl, mgr string, mgrType ast.Expr, twin, pkgPath string, setups portedSetups, imps map[string]string) (src string, serves bool, hosted []string, why string) {
	vars := map[string]string{}
	varTypes(f, fn.Body, pkgPath, setups, vars)
	local := map[string]string{}
	edits, serves, hosted, why := managerUses(f, fn.Body, mgr, pkgPath, setups, vars, local)
	if why != "" {
		return "", false, nil, why
	}
	off := func(p token.Pos) int { return f.Fset.Position(p).Offset }
	edits = append(edits, srcEdit{off(fn.Name.Pos()), off(fn.Name.End()), twin}, srcEdit{off(mgrType.Pos()), off(mgrType.End()), "*manager.Manager"})
	body, err := applyEdits(f, off(fn.Type.Pos()), off(fn.End()), edits)
	if err != nil {
		return "", false, nil, err.Error()
	}
	f.uses(fn.Body, imps)
	for _, p := range fn.Type.Params.List {
		if p.Type != mgrType {
			f.uses(p.Type, imps)
		}
	}
	for k, v := range local {
		imps[k] = v
	}
	imps["manager"] = opkitManager
	return fmt.Sprintf("// %s is %s on opkit's manager.\n%s\n", twin, fn.Name.Name, body), serves, hosted, ""
}

// givesHosted is what a report says of the library functions a port gives
// the controller-runtime manager opkit's hosts.
func givesHosted(funcs []string) string {
	if len(funcs) == 0 {
		return ""
	}
	return "; " + strings.Join(funcs, ", ") + " runs as it is on a controller-runtime manager opkit's hosts (crport.ControllerRuntimeManager)"
}

// managerMethod maps call, sel.Sel of controller-runtime's manager named
// mgr, to opkit's manager: node (the call, or the method's name alone) is
// to be replaced by to, which needs package crport if crport. node is nil
// where opkit's manager has no counterpart. main, helpers and suites map
// the manager's methods with it.
func managerMethod(f *kbFile, call *ast.CallExpr, sel *ast.SelectorExpr, mgr string) (node ast.Node, to string, crport bool) {
	name := sel.Sel.Name
	switch {
	case managerMethods[name] != "" && len(call.Args) == 0:
		to = fmt.Sprintf(managerMethods[name], mgr)
		return call, to, strings.HasPrefix(to, "crport.")
	case healthChecks[name] != "" && len(call.Args) == 2:
		return sel.Sel, healthChecks[name], false
	case (name == "GetEventRecorder" || name == "GetEventRecorderFor") && len(call.Args) == 1:
		to = fmt.Sprintf("crport.MustEventRecorder(%s, %s)", mgr, f.src(call.Args[0]))
		if name == "GetEventRecorderFor" {
			to = "crport.LegacyRecorder(" + to + ")"
		}
		return call, to, true
	}
	return nil, "", false
}
