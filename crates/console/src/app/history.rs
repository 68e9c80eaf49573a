//! The history view and the full-output viewer for the [`App`]: opening a
//! call's full output (spill files read off the UI task) or a waiting
//! command's whole preview, and asking where to save it. Their keys are
//! the panes' own (`panes::history`, `panes::viewer`).
//!
//! It only changes view state and queues I/O requests; it never reads a
//! file itself.

use crate::app::{App, Overlay};
use crate::io::IoRequest;
use crate::panes::modal::Modal;
use crate::panes::tools::CallStatus;
use crate::panes::viewer::{ModelView, Section, Viewer, build};
use vigil_protocol::ModelSaw;

impl App {
    /// Ask where to save the viewer's output (a name from its call).
    pub(crate) fn ask_save_path(&mut self) {
        let Overlay::History { viewer: Some(v) } = &self.overlay else {
            return;
        };
        let name = format!("vigil-output-{}.txt", safe_name(&v.call_id));
        let path = self.save_dir.join(name);
        self.modal = Some(Modal::save(&path.display().to_string()));
    }

    pub(crate) fn open_selected_output(&mut self) {
        let Some(record) = self.history.selected() else {
            return;
        };
        let call_id = record.call_id.clone();
        let title = format!("{} {}", record.tool, record.summary);
        let mut viewer = Viewer::loading(&call_id, &title);
        match &record.status {
            CallStatus::Finished(s) if s.truncated && !s.spill.is_empty() => {
                let files = s
                    .spill
                    .iter()
                    .enumerate()
                    .map(|(i, p)| (spill_label(p), p.clone(), model_view(s.seen.get(i))))
                    .collect();
                self.io.push(IoRequest::LoadOutput {
                    call_id: call_id.clone(),
                    files,
                });
            }
            _ => viewer.set_content(self.kept_output(&call_id)),
        }
        if let Overlay::History { viewer: slot } = &mut self.overlay {
            *slot = Some(viewer);
        }
    }

    /// Open the selected approval's preview whole in the viewer (search,
    /// save and copy work as for an output).
    pub(crate) fn open_preview(&mut self) {
        let Some(p) = self.approvals.selected() else {
            return;
        };
        let Some(report) = p.preview.as_deref() else {
            self.flash = Some("no preview to open: v previews the command".into());
            return;
        };
        let title = format!("preview of approval #{}", p.request.id);
        let mut viewer = Viewer::loading(&p.request.call_id, &title);
        viewer.set_content(build(&[Section {
            label: String::new(),
            text: report.to_text(),
            view: ModelView::Unknown,
        }]));
        self.overlay = Overlay::History {
            viewer: Some(viewer),
        };
    }

    /// The output the tools pane kept for a call, as viewer content.
    fn kept_output(&self, call_id: &str) -> crate::panes::viewer::Content {
        let Some(call) = self.tools.call(call_id) else {
            return build(&[Section {
                label: "output no longer kept by the console".into(),
                text: String::new(),
                view: ModelView::All,
            }]);
        };
        let mut text = String::new();
        for l in call.output.lines().iter() {
            let mark = match l.kind {
                crate::panes::tools::LineKind::Stdout => "",
                crate::panes::tools::LineKind::Stderr => "stderr: ",
                crate::panes::tools::LineKind::Info => "· ",
            };
            text.push_str(mark);
            text.push_str(&l.text);
            text.push('\n');
        }
        let mut label = "streamed output".to_string();
        let dropped = call.output.dropped();
        if dropped > 0 {
            label.push_str(&format!(" (the first {dropped} lines were not kept)"));
        }
        let truncated = matches!(&call.status, CallStatus::Finished(s) if s.truncated);
        let view = if truncated {
            ModelView::Unknown
        } else {
            ModelView::All
        };
        build(&[Section { label, text, view }])
    }
}

/// `run_shell-stdout` from `…/1712345-run_shell-stdout-0.txt`.
fn spill_label(path: &std::path::Path) -> String {
    let name = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut parts: Vec<&str> = name.split('-').collect();
    if parts.len() >= 3 {
        parts.remove(0);
        parts.pop();
        parts.join("-")
    } else {
        name
    }
}

/// Which part of a spilled output the model saw, as the call's summary
/// says (unknown for a session recorded before it did).
fn model_view(seen: Option<&ModelSaw>) -> ModelView {
    match seen {
        Some(ModelSaw::Head { chars }) => ModelView::Head(*chars),
        Some(ModelSaw::HeadTail { head, tail }) => ModelView::HeadTail {
            head: *head,
            tail: *tail,
        },
        None => ModelView::Unknown,
    }
}

fn safe_name(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(48)
        .collect()
}
