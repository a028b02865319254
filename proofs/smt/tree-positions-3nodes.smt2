; verispec certificate: tree-positions
; obligation: tree-positions: Tree node x sits at absolute position L-1+depth(x).
; convention: L-1+depth (EAGLE tree_position_ids, SGLang positions)
; case: 3 nodes
; this query asserts the preconditions and the negated property: unsat means the obligation holds
; written by z3 5.4.1
(set-info :status unsat)
(declare-fun parents3 () (Array Int Int))
(declare-fun L () Int)
(define-fun t1 () Int (select parents3 0))
(define-fun t2 () Int (select parents3 1))
(define-fun t3 () Int (select parents3 2))
(define-fun t4 () Int (- L 1))
(define-fun t5 () Bool (> 0 0))
(define-fun t6 () Bool (> 1 0))
(define-fun t7 () Int (+ 0 1))
(define-fun t8 () Bool (> 2 0))
(assert (= t1 (- 1)))
(assert (and (>= t2 0) (< t2 1)))
(assert (and (>= t3 0) (< t3 2)))
(assert (>= L 1))
(assert (not (and (= (+ t4 (+ (+ (* 0 0) (ite t5 1 0)) (ite (> (ite t5 t1 0) 0) 1 0))) (+ t4 0)) (= (+ t4 (+ (+ (* 1 0) (ite t6 1 0)) (ite (> (ite t6 t2 1) 0) 1 0))) (+ t4 t7)) (= (+ t4 (+ (+ (* 2 0) (ite t8 1 0)) (ite (> (ite t8 t3 2) 0) 1 0))) (+ t4 (ite (= t3 1) (+ t7 1) t7))))))
(check-sat)
