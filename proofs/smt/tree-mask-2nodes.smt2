; verispec certificate: tree-mask
; obligation: tree-visibility: Tree node x sees node y exactly when y is x or an ancestor of x.
; convention: ancestor-or-self walk (EAGLE-2 tree_mask, vLLM tree_attn, SGLang build_tree)
; case: 2 nodes
; this query asserts the preconditions and the negated property: unsat means the obligation holds
; written by z3 5.4.1
(set-info :status unsat)
(declare-fun parents2 () (Array Int Int))
(define-fun t1 () Int (select parents2 0))
(define-fun t2 () Int (select parents2 1))
(define-fun t3 () Int (ite (> 0 0) t1 0))
(define-fun t4 () Int (ite (> 1 0) t2 1))
(define-fun t5 () Bool (= t2 0))
(assert (= t1 (- 1)))
(assert (and (>= t2 0) (< t2 1)))
(assert (not (and (= (or (= 0 0) (= 0 t3)) true) (= (or (= 0 1) (= 1 t3)) false) (= (or (= 1 0) (= 0 t4)) (or false (and t5 true))) (= (or (= 1 1) (= 1 t4)) (or true (and t5 false))))))
(check-sat)
