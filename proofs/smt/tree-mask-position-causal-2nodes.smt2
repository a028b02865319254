; verispec certificate: tree-mask-position-causal
; obligation: tree-visibility: Tree node x sees node y exactly when y is x or an ancestor of x.
; convention: position-causal mask as a tree mask (docs/explanation/index-conventions.md#tree-verify-passes)
; case: 2 nodes
; this query asserts the preconditions and the negated property: unsat means the obligation holds
; written by z3 5.4.1
(set-info :status unsat)
(declare-fun parents2 () (Array Int Int))
(define-fun t1 () Int (select parents2 1))
(define-fun t2 () Int (+ (* 0 0) (ite (> 0 0) 1 0)))
(define-fun t3 () Int (+ (* 1 0) (ite (> 1 0) 1 0)))
(define-fun t4 () Bool (= t1 0))
(assert (= (select parents2 0) (- 1)))
(assert (and (>= t1 0) (< t1 1)))
(assert (not (and (= (<= t2 t2) true) (= (<= t3 t2) false) (= (<= t2 t3) (or false (and t4 true))) (= (<= t3 t3) (or true (and t4 false))))))
(check-sat)
