; verispec certificate: tree-mask-step
; obligation: tree-mask-step: Inductive step: the mask built row by row as row[x] = row[parent(x)] | {x} stays inside the lower triangle (only earlier nodes are visible), for trees of any size.
; convention: row[x] = row[parent(x)] | {x} (EAGLE-2 tree mask construction)
; this query asserts the preconditions and the negated property: unsat means the obligation holds
; written by z3 5.4.1
(set-info :status unsat)
(declare-fun x () Int)
(declare-fun parent (Int) Int)
(declare-fun mask (Int Int) Bool)
(declare-fun y () Int)
(define-fun t1 () Int (parent x))
(define-fun t2 () Bool (mask x y))
(define-fun t3 () Bool (mask t1 y))
(define-fun t4 () Bool (>= y 0))
(assert (>= x 1))
(assert (>= t1 0))
(assert (< t1 x))
(assert (= t2 (or (= y x) t3)))
(assert (=> t3 (and t4 (<= y t1))))
(assert (not (=> t2 (and t4 (<= y x)))))
(check-sat)
