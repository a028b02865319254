; verispec certificate: paged-slots
; obligation: paged-slots: With an injective block table, distinct positions map to distinct physical slots (slot = table[pos // B] * B + pos % B, symbolic page size B).
; convention: table[pos // B] * B + pos % B (vLLM _compute_slot_mapping_kernel)
; this query asserts the preconditions and the negated property: unsat means the obligation holds
; written by z3 5.4.1
(set-info :status unsat)
(declare-fun page_size () Int)
(declare-fun pos1 () Int)
(declare-fun pos2 () Int)
(declare-fun block_table () (Array Int Int))
(define-fun t1 () Int (div pos1 page_size))
(define-fun t2 () Int (select block_table t1))
(define-fun t3 () Int (div pos2 page_size))
(define-fun t4 () Int (select block_table t3))
(assert (>= page_size 1))
(assert (>= pos1 0))
(assert (>= pos2 0))
(assert (distinct pos1 pos2))
(assert (>= t2 0))
(assert (>= t4 0))
(assert (=> (distinct t1 t3) (distinct t2 t4)))
(assert (not (distinct (+ (* t2 page_size) (mod pos1 page_size)) (+ (* t4 page_size) (mod pos2 page_size)))))
(check-sat)
