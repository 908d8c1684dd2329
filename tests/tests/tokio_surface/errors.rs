//! Every public error type is `Send + Sync + 'static`, so `?` moves it into a
//! `Box<dyn Error + Send + Sync>` (the error type of most tokio programs and of hyper).

use std::error::Error;

type BoxError = Box<dyn Error + Send + Sync>;

/// Compiles only if `E` converts with `?`.
fn question_mark<E: Error + Send + Sync + 'static>(r: Result<(), E>) -> Result<(), BoxError> {
    r?;
    Ok(())
}

#[test]
fn every_public_error_converts_into_a_send_sync_box_with_question_mark() {
    use evloop::event_loop::{ExecutorError, LoopError, WrongLoopError};
    use evloop::fiber::FiberError;
    use evloop::io::OpError;
    use evloop::protocol::DatagramDropped;
    use evloop::streams::StreamError;
    use evloop::sync::queue::{QueueShutDown, TaskDoneError, TryGetError, TryPutError};
    use evloop::sync::{SyncError, mpsc, oneshot, threadsafe};
    use evloop::task::{GroupError, InvalidStateError, PromiseError, RunError, TaskError};
    use evloop::time::Elapsed;

    // The test is that this compiles: each line instantiates `?` for one error type.
    let _ = question_mark::<LoopError>;
    let _ = question_mark::<WrongLoopError>;
    let _ = question_mark::<ExecutorError>;
    let _ = question_mark::<FiberError>;
    let _ = question_mark::<OpError>;
    let _ = question_mark::<DatagramDropped>;
    let _ = question_mark::<StreamError>;
    let _ = question_mark::<QueueShutDown<String>>;
    let _ = question_mark::<TaskDoneError>;
    let _ = question_mark::<TryGetError>;
    let _ = question_mark::<TryPutError<String>>;
    let _ = question_mark::<SyncError>;
    let _ = question_mark::<mpsc::SendError<String>>;
    let _ = question_mark::<mpsc::TrySendError<String>>;
    let _ = question_mark::<mpsc::TryRecvError>;
    let _ = question_mark::<oneshot::RecvError>;
    let _ = question_mark::<oneshot::TryRecvError>;
    let _ = question_mark::<threadsafe::TryRecvError>;
    let _ = question_mark::<GroupError<String>>;
    let _ = question_mark::<InvalidStateError>;
    let _ = question_mark::<PromiseError>;
    let _ = question_mark::<RunError>;
    let _ = question_mark::<TaskError>;
    let _ = question_mark::<Elapsed>;
    let _ = question_mark::<evloop::sync::broadcast::error::SendError<String>>;
    let _ = question_mark::<evloop::sync::broadcast::error::RecvError>;
    let _ = question_mark::<evloop::sync::broadcast::error::TryRecvError>;
    let _ = question_mark::<evloop::sync::watch::error::SendError<String>>;
    let _ = question_mark::<evloop::sync::watch::error::RecvError>;
    let _ = question_mark::<evloop::stream::wrappers::BroadcastStreamRecvError>;
}

#[test]
fn a_task_panic_crosses_into_a_send_sync_box_with_its_message() {
    fn run() -> Result<(), BoxError> {
        evloop::run(async { evloop::spawn(async { panic!("boom") }).await })??;
        Ok(())
    }
    let err = run().unwrap_err();
    assert!(err.to_string().contains("boom"), "{err}");
    let task_error = err
        .downcast_ref::<evloop::task::TaskError>()
        .expect("the TaskError itself");
    assert_eq!(task_error.panic().map(|p| p.message()), Some("boom"));
}
