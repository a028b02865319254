; verispec certificate: batch-offsets-shared
; obligation: batch-offsets: In a batch with ragged acceptance each row's cache offset advances by its own accepted count plus one.
; convention: one offset advanced for every row (Blaizzy/mlx-vlm PR #1155)
; this query asserts the preconditions and the negated property: sat means a counterexample exists
; written by z3 5.4.1
(set-info :status sat)
(declare-fun offset0 () Int)
(declare-fun offset1 () Int)
(declare-fun accepted0 () Int)
(declare-fun accepted1 () Int)
(define-fun t1 () Int (+ (+ offset0 accepted0) 1))
(assert (>= offset0 0))
(assert (>= offset1 0))
(assert (>= accepted0 0))
(assert (>= accepted1 0))
(assert (not (and (= t1 t1) (= (+ (+ offset1 accepted0) 1) (+ (+ offset1 accepted1) 1)))))
(check-sat)
