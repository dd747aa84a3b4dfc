package scaffold

import (
	"go/ast"
	"go/token"
)

// returnedChain is the builder chain fn returns, if its body is one
// return statement of a chain (or the chain's error assigned and
// returned); nil otherwise.
func returnedChain(fn *ast.FuncDecl) []*ast.CallExpr {
	return returnedChainIn(fn.Body.List)
}

// returnedChainIn is returnedChain of the statements body.
func returnedChainIn(body []ast.Stmt) []*ast.CallExpr {
	for _, st := range body {
		var e ast.Expr
		switch s := st.(type) {
		case *ast.ReturnStmt:
			if len(s.Results) == 1 {
				e = s.Results[0]
			}
		case *ast.AssignStmt:
			if len(s.Rhs) == 1 {
				e = s.Rhs[0]
			}
		case *ast.IfStmt:
			if a, ok := s.Init.(*ast.AssignStmt); ok && len(a.Rhs) == 1 {
				e = a.Rhs[0]
			}
		}
		if e == nil {
			continue
		}
		if calls, ok := callChain(e); ok && len(calls) > 1 {
			switch method(calls[0]) {
			case "NewControllerManagedBy", "NewWebhookManagedBy":
				return calls
			}
		}
	}
	return nil
}

// watch is one watch of a ported controller.
type watch struct {
	fn    string // For, Owns or Watches
	typ   string // *pkg.T
	mapFn string // Watches: the map function, opkit-typed
	preds []string
	cond  string // the condition the setup adds the watch under; "" for always
}

// segment is part of a controller's builder: calls made always (cond nil),
// or under cond.
type segment struct {
	cond  ast.Expr
	calls []*ast.CallExpr
}

// builderSegments are the builder calls of a SetupWithManager after
// NewControllerManagedBy: one returned chain, or a builder kept in a
// variable, extended under conditions, and completed in the return:
//
//	b := ctrl.NewControllerManagedBy(mgr).For(&T{})
//	if cond { b = b.Watches(...) }
//	return b.Complete(r)
//
// pre are the statements before the builder (lws's DisaggregatedSet
// controller makes its helpers from mgr.GetClient() first). ok is false
// for any other body.
func builderSegments(fn *ast.FuncDecl) (pre []ast.Stmt, segs []segment, ok bool) {
	body := fn.Body.List
	for i := range body {
		if segs, ok := builderSegmentsIn(body[i:]); ok {
			return body[:i], segs, true
		}
		if mentionsBuilder(body[i]) {
			break
		}
	}
	return nil, nil, false
}

// mentionsBuilder says whether st calls NewControllerManagedBy.
func mentionsBuilder(st ast.Stmt) bool {
	found := false
	ast.Inspect(st, func(n ast.Node) bool {
		if c, ok := n.(*ast.CallExpr); ok && method(c) == "NewControllerManagedBy" {
			found = true
		}
		return !found
	})
	return found
}

// builderSegmentsIn is builderSegments of a body with no statements
// before the builder.
func builderSegmentsIn(body []ast.Stmt) ([]segment, bool) {
	if chain := returnedChainIn(body); chain != nil && len(body) == 1 {
		return []segment{{calls: chain[1:]}}, true
	}
	if len(body) < 2 {
		return nil, false
	}
	first, ok := body[0].(*ast.AssignStmt)
	if !ok || len(first.Lhs) != 1 || len(first.Rhs) != 1 {
		return nil, false
	}
	v, ok := first.Lhs[0].(*ast.Ident)
	if !ok {
		return nil, false
	}
	calls, ok := callChain(first.Rhs[0])
	if !ok || method(calls[0]) != "NewControllerManagedBy" {
		return nil, false
	}
	segs := []segment{{calls: calls[1:]}}
	// onV is the chain e continues v with.
	onV := func(e ast.Expr) ([]*ast.CallExpr, bool) {
		calls, ok := callChain(e)
		if !ok {
			return nil, false
		}
		root, isID := calls[0].Fun.(*ast.SelectorExpr).X.(*ast.Ident)
		return calls, isID && root.Name == v.Name
	}
	extends := func(st ast.Stmt) ([]*ast.CallExpr, bool) {
		a, ok := st.(*ast.AssignStmt)
		if !ok || a.Tok != token.ASSIGN || len(a.Lhs) != 1 || len(a.Rhs) != 1 {
			return nil, false
		}
		if id, isID := a.Lhs[0].(*ast.Ident); !isID || id.Name != v.Name {
			return nil, false
		}
		return onV(a.Rhs[0])
	}
	for _, st := range body[1 : len(body)-1] {
		if calls, ok := extends(st); ok {
			segs = append(segs, segment{calls: calls})
			continue
		}
		ifs, ok := st.(*ast.IfStmt)
		if !ok || ifs.Init != nil || ifs.Else != nil || len(ifs.Body.List) != 1 {
			return nil, false
		}
		calls, ok := extends(ifs.Body.List[0])
		if !ok {
			return nil, false
		}
		segs = append(segs, segment{cond: ifs.Cond, calls: calls})
	}
	ret, ok := body[len(body)-1].(*ast.ReturnStmt)
	if !ok || len(ret.Results) != 1 {
		return nil, false
	}
	last, ok := onV(ret.Results[0])
	if !ok {
		return nil, false
	}
	return append(segs, segment{calls: last}), true
}
