; verispec certificate: tree-mask-siblings
; obligation: tree-visibility: Tree node x sees node y exactly when y is x or an ancestor of x.
; convention: siblings see each other (vLLM PR #22226 class (broken tree attention))
; case: 2 nodes
; this query asserts the preconditions and the negated property: unsat means the obligation holds
; written by z3 5.4.1
(set-info :status unsat)
(declare-fun parents2 () (Array Int Int))
(define-fun t1 () Int (select parents2 0))
(define-fun t2 () Int (select parents2 1))
(define-fun t3 () Bool (> 0 0))
(define-fun t4 () Int (ite t3 t1 0))
(define-fun t5 () Bool (> 1 0))
(define-fun t6 () Int (ite t5 t2 1))
(define-fun t7 () Bool (= t2 0))
(assert (= t1 (- 1)))
(assert (and (>= t2 0) (< t2 1)))
(assert (not (and (= (or (or (= 0 0) (= 0 t4)) (and t3 t3 (= t1 t1))) true) (= (or (or (= 0 1) (= 1 t4)) (and t3 t5 (= t1 t2))) false) (= (or (or (= 1 0) (= 0 t6)) (and t5 t3 (= t2 t1))) (or false (and t7 true))) (= (or (or (= 1 1) (= 1 t6)) (and t5 t5 (= t2 t2))) (or true (and t7 false))))))
(check-sat)
