; verispec certificate: tree-position-step
; obligation: tree-position-step: Inductive step: depth(x) = depth(parent(x)) + 1 places every node one position after its parent, so positions are strictly increasing along every path, for trees of any size.
; convention: depth(x) = depth(parent(x)) + 1 (EAGLE/Medusa position ids)
; this query asserts the preconditions and the negated property: unsat means the obligation holds
; written by z3 5.4.1
(set-info :status unsat)
(declare-fun L () Int)
(declare-fun x () Int)
(declare-fun parent (Int) Int)
(declare-fun depth (Int) Int)
(define-fun t1 () Int (parent x))
(define-fun t2 () Int (depth x))
(define-fun t3 () Int (depth t1))
(define-fun t4 () Int (- L 1))
(define-fun t5 () Int (+ t4 t2))
(assert (>= L 1))
(assert (>= x 1))
(assert (>= t1 0))
(assert (< t1 x))
(assert (= t2 (+ t3 1)))
(assert (>= t3 0))
(assert (not (and (= t5 (+ (+ t4 t3) 1)) (>= t5 L))))
(check-sat)
