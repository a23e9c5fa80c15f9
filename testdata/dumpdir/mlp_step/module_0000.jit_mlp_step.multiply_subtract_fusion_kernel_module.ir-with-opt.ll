; ModuleID = '__compute_module_multiply_subtract_fusion_kernel_module'
source_filename = "__compute_module_multiply_subtract_fusion_kernel_module"
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

; Function Attrs: nofree norecurse nosync nounwind memory(readwrite, target_mem: none) uwtable
define noalias noundef ptr @multiply_subtract_fusion(ptr nofree readonly captures(none) %0) local_unnamed_addr #0 {
vector.ph:
  %1 = getelementptr inbounds nuw i8, ptr %0, i64 24
  %2 = load ptr, ptr %1, align 8, !invariant.load !3
  %3 = load ptr, ptr %2, align 8, !invariant.load !3, !dereferenceable !4
  %4 = getelementptr inbounds nuw i8, ptr %2, i64 16
  %5 = load ptr, ptr %4, align 8, !invariant.load !3, !dereferenceable !4
  tail call void @llvm.experimental.noalias.scope.decl(metadata !5)
  tail call void @llvm.experimental.noalias.scope.decl(metadata !8)
  br label %vector.body

vector.body:                                      ; preds = %vector.body, %vector.ph
  %index = phi i64 [ 0, %vector.ph ], [ %index.next, %vector.body ]
  %6 = shl nuw nsw i64 %index, 2
  %7 = getelementptr inbounds nuw [4 x i8], ptr %5, i64 %6
  %wide.vec = load <32 x float>, ptr %7, align 4, !alias.scope !8, !noalias !5
  %8 = getelementptr inbounds nuw [4 x i8], ptr %3, i64 %6
  %wide.vec5 = load <32 x float>, ptr %8, align 4, !invariant.load !3, !alias.scope !5, !noalias !8
  %9 = fmul <32 x float> %wide.vec, splat (float 1.000000e-01)
  %interleaved.vec = fsub <32 x float> %wide.vec5, %9
  store <32 x float> %interleaved.vec, ptr %7, align 4, !alias.scope !8, !noalias !5
  %index.next = add nuw i64 %index, 8
  %10 = icmp eq i64 %index.next, 16
  br i1 %10, label %multiply_subtract_fusion_wrapped.exit, label %vector.body, !llvm.loop !10

multiply_subtract_fusion_wrapped.exit:            ; preds = %vector.body
  ret ptr null
}

; Function Attrs: mustprogress nocallback nofree nosync nounwind willreturn memory(inaccessiblemem: readwrite)
declare void @llvm.experimental.noalias.scope.decl(metadata) #1

attributes #0 = { nofree norecurse nosync nounwind memory(readwrite, target_mem: none) uwtable "frame-pointer"="all" "prefer-vector-width"="256" }
attributes #1 = { mustprogress nocallback nofree nosync nounwind willreturn memory(inaccessiblemem: readwrite) }

!llvm.module.flags = !{!0, !1}
!xla_cpu_memory_region_name = !{!2}

!0 = !{i32 2, !"Debug Info Version", i32 3}
!1 = !{i32 1, !"xla_dylib_index", i64 3}
!2 = !{!"xla_cpu_emitter__loop_fusion_kernel_emitter__hlo_opcode__fusion"}
!3 = !{}
!4 = !{i64 256}
!5 = !{!6}
!6 = distinct !{!6, !7, !"multiply_subtract_fusion_wrapped: argument 0"}
!7 = distinct !{!7, !"multiply_subtract_fusion_wrapped"}
!8 = !{!9}
!9 = distinct !{!9, !7, !"multiply_subtract_fusion_wrapped: argument 1"}
!10 = distinct !{!10, !11, !12, !13}
!11 = !{!"llvm.loop.unroll.disable"}
!12 = !{!"llvm.loop.isvectorized", i32 1}
!13 = !{!"llvm.loop.unroll.runtime.disable"}
