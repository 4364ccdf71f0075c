//! A TCP proxy in front of a server (PostgreSQL), which a test can take down and bring back:
//! down, it cuts every open connection and refuses new ones, as a database that went away.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

pub struct Proxy {
    pub port: u16,
    down: Arc<AtomicBool>,
    cut: watch::Sender<u64>,
}

impl Proxy {
    pub async fn start(target: std::net::SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let down = Arc::new(AtomicBool::new(false));
        let (cut, cuts) = watch::channel(0u64);
        let is_down = down.clone();
        tokio::spawn(async move {
            loop {
                let Ok((inbound, _)) = listener.accept().await else {
                    return;
                };
                if is_down.load(Ordering::SeqCst) {
                    drop(inbound);
                    continue;
                }
                let mut cuts = cuts.clone();
                cuts.borrow_and_update();
                tokio::spawn(async move {
                    let Ok(mut outbound) = TcpStream::connect(target).await else {
                        return;
                    };
                    let mut inbound = inbound;
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                        _ = cuts.changed() => {}
                    }
                });
            }
        });
        Proxy { port, down, cut }
    }

    /// Cuts every connection and refuses new ones until `up`.
    pub fn down(&self) {
        self.down.store(true, Ordering::SeqCst);
        self.cut.send_modify(|n| *n += 1);
    }

    pub fn up(&self) {
        self.down.store(false, Ordering::SeqCst);
    }
}
