; verispec certificate: tree-positions
; obligation: tree-positions: Tree node x sits at absolute position L-1+depth(x).
; convention: L-1+depth (EAGLE tree_position_ids, SGLang positions)
; case: 2 nodes
; this query asserts the preconditions and the negated property: unsat means the obligation holds
; written by z3 5.4.1
(set-info :status unsat)
(declare-fun parents2 () (Array Int Int))
(declare-fun L () Int)
(define-fun t1 () Int (select parents2 1))
(define-fun t2 () Int (- L 1))
(assert (= (select parents2 0) (- 1)))
(assert (and (>= t1 0) (< t1 1)))
(assert (>= L 1))
(assert (not (and (= (+ t2 (+ (* 0 0) (ite (> 0 0) 1 0))) (+ t2 0)) (= (+ t2 (+ (* 1 0) (ite (> 1 0) 1 0))) (+ t2 (+ 0 1))))))
(check-sat)
